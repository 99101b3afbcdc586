/*
 * bench_common.hpp -- small helpers shared by the benchmark drivers (mpia_bench, mpia_bench_v):
 * option parsing, the hang watchdog, the data pattern, CSV quoting, the MPI library's name.
 *
 * Header-only (every function inline), in namespace mpia_bench. Uses only <mpi.h>, never
 * mpi_advance.h, so system_pcoll.cpp could include it too.
 */
#ifndef MPIA_BENCH_COMMON_HPP
#define MPIA_BENCH_COMMON_HPP

#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

namespace mpia_bench {

// Comma (or other separator) list; empty items are dropped.
inline std::vector<std::string> split(const std::string &s, char sep)
{
    std::vector<std::string> out;
    std::size_t start = 0;
    while (start <= s.size()) {
        std::size_t end = s.find(sep, start);
        if (end == std::string::npos) end = s.size();
        if (end > start) out.push_back(s.substr(start, end - start));
        start = end + 1;
    }
    return out;
}

// Unsigned decimal with an optional k/K (1024) or m/M (1024^2) suffix.
inline bool parse_u64(const std::string &tok, unsigned long long &value)
{
    if (tok.empty() || tok[0] == '-' || tok[0] == '+') return false;
    char *end = nullptr;
    errno = 0;
    unsigned long long v = std::strtoull(tok.c_str(), &end, 10);
    if (errno != 0 || end == tok.c_str()) return false;
    std::string suffix(end);
    if (suffix == "k" || suffix == "K") v *= 1024ull;
    else if (suffix == "m" || suffix == "M") v *= 1024ull * 1024ull;
    else if (!suffix.empty()) return false;
    value = v;
    return true;
}

// 64-bit mixer (splitmix64 finalizer): the source of every pseudo-random choice of the drivers,
// so that the same seed gives the same numbers on every rank, run and MPI library.
inline std::uint64_t mix64(std::uint64_t h)
{
    h ^= h >> 30;
    h *= 0xBF58476D1CE4E5B9ull;
    h ^= h >> 27;
    h *= 0x94D049BB133111EBull;
    h ^= h >> 31;
    return h;
}

// The byte a correct all-to-all delivers at index i of the block from src to dst.
inline unsigned char pattern(unsigned src, unsigned dst, std::size_t i)
{
    std::uint64_t h = (src + 1ull) * 0x9E3779B97F4A7C15ull ^ (dst + 1ull) * 0xC2B2AE3D27D4EB4Full ^
                      (i + 1ull) * 0x165667B19E3779F9ull;
    h ^= h >> 29;
    h *= 0xBF58476D1CE4E5B9ull;
    h ^= h >> 32;
    return static_cast<unsigned char>(h);
}

// A uniform all-to-all send buffer of blocks of `block` bytes: block d holds pattern(rank, d, i).
inline void fill_send(std::vector<unsigned char> &buf, int rank, int nprocs, std::size_t block)
{
    for (int d = 0; d < nprocs; ++d)
        for (std::size_t i = 0; i < block; ++i)
            buf[d * block + i] = pattern(static_cast<unsigned>(rank), static_cast<unsigned>(d), i);
}

// Every byte of a receive buffer made different from what a correct all-to-all writes there.
inline void poison_recv(std::vector<unsigned char> &buf, int rank, int nprocs, std::size_t block)
{
    for (int s = 0; s < nprocs; ++s)
        for (std::size_t i = 0; i < block; ++i)
            buf[s * block + i] = static_cast<unsigned char>(
                ~pattern(static_cast<unsigned>(s), static_cast<unsigned>(rank), i));
}

inline std::string mpi_error_string(int rc)
{
    char buf[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(rc, buf, &len) != MPI_SUCCESS) return "error " + std::to_string(rc);
    return std::string(buf, static_cast<std::size_t>(len)) + " (" + std::to_string(rc) + ")";
}

inline std::string csv_quote(const std::string &s)
{
    std::string out = "\"";
    for (char ch : s) {
        if (ch == '"') out += "\"\"";
        else out += ch;
    }
    return out + "\"";
}

// First line of MPI_Get_library_version, tabs and runs of spaces collapsed.
inline std::string first_line_of_library_version()
{
    char buf[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(buf, &len);
    buf[MPI_MAX_LIBRARY_VERSION_STRING - 1] = '\0';
    std::string s(buf, strnlen(buf, static_cast<std::size_t>(std::max(0, len))));
    auto nl = s.find('\n');
    if (nl != std::string::npos) s.resize(nl);
    for (char &ch : s)
        if (ch == '\t' || ch == '\r') ch = ' ';
    while (!s.empty() && s.back() == ' ') s.pop_back();
    std::string out;
    for (char ch : s)
        if (!(ch == ' ' && !out.empty() && out.back() == ' ')) out += ch;
    return out;
}

// Median of a copy of v (0 for an empty vector).
inline double median(std::vector<double> v)
{
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    std::size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// A thread (making no MPI calls) that ends the process when an iteration makes no progress.
struct Watchdog {
    std::atomic<long long> stamp_ns{0};
    std::mutex mu;
    std::condition_variable cv;
    bool stop = false;
    char phase[512] = "startup";
    std::mutex phase_mu;
    std::thread th;
    double limit_s = 0;
    int rank = 0;
    const char *prog = "mpia_bench";

    static long long now_ns()
    {
        return std::chrono::duration_cast<std::chrono::nanoseconds>(
                   std::chrono::steady_clock::now().time_since_epoch())
            .count();
    }
    void set_phase(const std::string &p)
    {
        {
            std::lock_guard<std::mutex> lk(phase_mu);
            std::snprintf(phase, sizeof phase, "%s", p.c_str());
        }
        poke();
    }
    void poke() { stamp_ns.store(now_ns(), std::memory_order_relaxed); }
    void start(double limit, int r, const char *program = "mpia_bench")
    {
        limit_s = limit;
        rank = r;
        prog = program;
        poke();
        if (limit <= 0) return;
        th = std::thread([this] {
            std::unique_lock<std::mutex> lk(mu);
            while (!stop) {
                cv.wait_for(lk, std::chrono::seconds(1));
                if (stop) break;
                double idle = (now_ns() - stamp_ns.load(std::memory_order_relaxed)) * 1e-9;
                if (idle > limit_s) {
                    std::lock_guard<std::mutex> plk(phase_mu);
                    std::fprintf(stderr,
                                 "%s: FATAL: rank %d made no progress for %.0f s in %s "
                                 "(hang?); aborting\n",
                                 prog, rank, idle, phase);
                    std::fflush(stderr);
                    _exit(124);
                }
            }
        });
    }
    void finish()
    {
        {
            std::lock_guard<std::mutex> lk(mu);
            stop = true;
        }
        cv.notify_all();
        if (th.joinable()) th.join();
    }
};

}  // namespace mpia_bench

#endif
