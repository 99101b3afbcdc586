// mpia_fft3d: a distributed 3D complex-to-complex FFT mini-app.
//
// An N1 x N2 x N3 grid (x, y, z) is distributed over a Pr x Pc process grid in pencils
// (2D decomposition). Rank = r * Pc + c; the row communicator holds the Pc ranks of one r,
// the column communicator the Pr ranks of one c.
//
//   x-pencil: x whole, y split over Pc (block c), z split over Pr (block r); x fastest
//   y-pencil: x split over Pc (block c), y whole, z split over Pr (block r); y fastest
//   z-pencil: x split over Pc (block c), y split over Pr (block r), z whole; z fastest
//
// Forward: FFT(x), transpose x->y in the row comm, FFT(y), transpose y->z in the column
// comm, FFT(z). Inverse: the same backwards, normalised by N1*N2*N3. The local 1D FFTs are
// serial FFTW (batched with fftw_plan_many_dft); every transpose is an alltoallv, run by the
// selected backend: "system" calls MPI_Alltoallv every time; any other name is an
// mpi-advance algorithm, given as info "mpix_algorithm" to MPIX_Alltoallv_init once per
// transpose, and the four persistent requests are started and waited on every iteration.
// Blocks are split as evenly as possible (the first N % P blocks get one more), so the counts
// really vary when N is not a multiple of P.
//
// Checks (every one a non-zero exit on every rank on failure):
//   - a plane wave exp(2 pi i (k1 x/N1 + k2 y/N2 + k3 z/N3)) must transform to
//     N1*N2*N3 at (k1, k2, k3) and 0 elsewhere;
//   - for grids up to --serial-max points, the forward transform of pseudo-random data,
//     gathered on rank 0, must match a serial 3D FFTW of the whole grid;
//   - for every backend, forward + inverse must give back the input within --tol (relative).
//
// Output: per backend, the time per forward + inverse of the alltoallv calls alone, of the
// transposes (pack + alltoallv + unpack) and of the whole (FFTs included): the mean over the
// timed iterations, the max over ranks; and the ratios vs "system". A table on rank 0, and a
// CSV file with --csv.
//
// --1d M: instead, a 1-D FFT of N = P^2 * M points over all P ranks, as seed 003 (section VI) ran
// it on Theta and Polaris behind FFTW: rank r holds points [r*P*M, (r+1)*P*M) in natural order,
// before and after. The six-step algorithm with N = N1 * N2, N1 = P, N2 = P * M (x[n1 + P*n2]):
// transpose so that rank r holds the n1 = r column (alltoall 1), P*M-point FFTs, twiddles
// W_N^(n1*k2), transpose so that rank u holds k2 in [u*M, (u+1)*M) (alltoall 2), M P-point FFTs,
// transpose into natural order (alltoall 3). Three alltoalls of M complex (16*M bytes) per block:
// the paper's 16 B (N = P^2) and 1 KiB (N = 64 P^2). "system" is MPI_Alltoall; any other backend
// an mpi-advance alltoall algorithm given to MPIX_Alltoall_init, one persistent request per
// transpose (the inverse transform reuses them). Checks: a tone exp(2 pi i f n / N) transforms
// to N at f and 0 elsewhere, on every rank's every point; up to --serial-max points, pseudo-random
// data against a serial 1-D FFTW of the whole N on rank 0; and the round trip of every backend.

#include <mpi.h>

#include "mpi_advance.h"

#include <fftw3.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

using cplx = std::complex<double>;
static_assert(sizeof(cplx) == sizeof(fftw_complex), "std::complex<double> must match fftw_complex");

// ---------------------------------------------------------------------------------------------
// Options
// ---------------------------------------------------------------------------------------------
struct Options {
  int n[3] = {32, 32, 32};
  int grid[2] = {0, 0};  // Pr, Pc; 0 = MPI_Dims_create
  int iters = 10;
  int warmup = 1;
  std::vector<std::string> backends;  // empty = system + every mpi-advance algorithm
  std::string csv;
  double tol = 1e-9;
  long long serial_max = 1LL << 18;  // largest grid checked against a serial FFTW on rank 0
  int m1d = 0;                       // --1d M: the 1-D FFT of P^2 * M points instead
};

[[noreturn]] void usage_error(int rank, const std::string& msg) {
  if (rank == 0) {
    std::fprintf(stderr,
                 "mpia_fft3d: %s\n"
                 "usage: mpia_fft3d [--n N | --dims N1,N2,N3] [--grid Pr,Pc] [--iters K]\n"
                 "                  [--warmup W] [--backends b1,b2,...] [--csv FILE]\n"
                 "                  [--tol T] [--serial-max POINTS] [--1d M]\n"
                 "backends: system (MPI_Alltoallv) or an mpi-advance alltoallv algorithm\n"
                 "          (name[:key=value[,key=value]], e.g. bruck:radix=4); default: all\n"
                 "--1d M:   a 1-D FFT of P^2 * M points (three alltoalls of M complex per\n"
                 "          block); backends: system (MPI_Alltoall) or alltoall algorithms\n",
                 msg.c_str());
  }
  MPI_Finalize();
  std::exit(2);
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  std::istringstream is(s);
  while (std::getline(is, cur, sep))
    if (!cur.empty()) out.push_back(cur);
  return out;
}

bool parse_int(const std::string& s, long long lo, long long hi, long long* v) {
  if (s.empty()) return false;
  char* end = nullptr;
  errno = 0;
  long long x = std::strtoll(s.c_str(), &end, 10);
  if (errno != 0 || *end != '\0' || x < lo || x > hi) return false;
  *v = x;
  return true;
}

Options parse_options(int argc, char** argv, int rank) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage_error(rank, "missing value after " + a);
      return argv[++i];
    };
    long long v = 0;
    if (a == "--n") {
      if (!parse_int(value(), 1, 1 << 20, &v)) usage_error(rank, "bad --n");
      o.n[0] = o.n[1] = o.n[2] = static_cast<int>(v);
    } else if (a == "--dims") {
      auto parts = split(value(), ',');
      if (parts.size() != 3) usage_error(rank, "--dims wants N1,N2,N3");
      for (int d = 0; d < 3; ++d) {
        if (!parse_int(parts[d], 1, 1 << 20, &v)) usage_error(rank, "bad --dims");
        o.n[d] = static_cast<int>(v);
      }
    } else if (a == "--grid") {
      auto parts = split(value(), ',');
      if (parts.size() != 2) usage_error(rank, "--grid wants Pr,Pc");
      for (int d = 0; d < 2; ++d) {
        if (!parse_int(parts[d], 1, 1 << 20, &v)) usage_error(rank, "bad --grid");
        o.grid[d] = static_cast<int>(v);
      }
    } else if (a == "--iters") {
      if (!parse_int(value(), 1, 1 << 24, &v)) usage_error(rank, "bad --iters");
      o.iters = static_cast<int>(v);
    } else if (a == "--warmup") {
      if (!parse_int(value(), 0, 1 << 24, &v)) usage_error(rank, "bad --warmup");
      o.warmup = static_cast<int>(v);
    } else if (a == "--backends") {
      // An item with '=' but no ':' is another parameter of the item before it:
      // "system,tra2:radix_intra=8,radix_inter=2" is two backends.
      for (const std::string& item : split(value(), ',')) {
        if (!o.backends.empty() && item.find('=') != std::string::npos &&
            item.find(':') == std::string::npos)
          o.backends.back() += "," + item;
        else
          o.backends.push_back(item);
      }
      if (o.backends.empty()) usage_error(rank, "empty --backends");
    } else if (a == "--csv") {
      o.csv = value();
    } else if (a == "--tol") {
      std::string s = value();
      char* end = nullptr;
      o.tol = std::strtod(s.c_str(), &end);
      if (*end != '\0' || !(o.tol > 0)) usage_error(rank, "bad --tol");
    } else if (a == "--serial-max") {
      if (!parse_int(value(), 0, std::numeric_limits<long long>::max(), &v))
        usage_error(rank, "bad --serial-max");
      o.serial_max = v;
    } else if (a == "--1d") {
      if (!parse_int(value(), 1, 1 << 20, &v)) usage_error(rank, "bad --1d");
      o.m1d = static_cast<int>(v);
    } else if (a == "-h" || a == "--help") {
      usage_error(rank, "help");
    } else {
      usage_error(rank, "unknown argument '" + a + "'");
    }
  }
  return o;
}

// ---------------------------------------------------------------------------------------------
// Decomposition
// ---------------------------------------------------------------------------------------------
// Block b of n split into p parts: the first n % p blocks get one extra element.
int block_size(int n, int p, int b) { return n / p + (b < n % p ? 1 : 0); }
int block_start(int n, int p, int b) { return b * (n / p) + std::min(b, n % p); }

struct Range {
  int start = 0, size = 0;
};
Range block(int n, int p, int b) { return {block_start(n, p, b), block_size(n, p, b)}; }

// The algorithms some persistent requests run, each named once, joined by '|'.
std::string names_of(const MPIX_Request* reqs, int n) {
  std::vector<std::string> names;
  for (int i = 0; i < n; ++i) {
    char buf[MPIX_MAX_ALGORITHM_STRING];
    int len = 0;
    if (MPIX_Request_get_algorithm(reqs[i], buf, &len) != MPI_SUCCESS) continue;
    std::string s(buf, len);
    if (std::find(names.begin(), names.end(), s) == names.end()) names.push_back(s);
  }
  std::string out;
  for (auto& s : names) out += (out.empty() ? "" : "|") + s;
  return out;
}

// Makes n persistent requests, init(i, info) the i-th, info naming an mpi-advance algorithm.
// Returns the last error (the same class on every rank for a bad name).
template <class Init>
int init_requests(const std::string& algorithm, int n, Init init) {
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, MPIX_INFO_KEY_ALGORITHM, algorithm.c_str());
  int rc = MPI_SUCCESS;
  for (int i = 0; i < n; ++i)
    if (int err = init(i, info); err != MPI_SUCCESS) rc = err;
  MPI_Info_free(&info);
  return rc;
}

// An exchange that failed ends the run.
void check_exchange(int err, const char* what) {
  if (err == MPI_SUCCESS) return;
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(err, msg, &len);
  std::fprintf(stderr, "mpia_fft3d: %s failed: %s\n", what, msg);
  MPI_Abort(MPI_COMM_WORLD, 3);
}

// One alltoallv: counts and displacements in complex elements, and its request.
struct Exchange {
  std::vector<int> scounts, sdispls, rcounts, rdispls;
  MPI_Comm comm = MPI_COMM_NULL;
  MPIX_Request req = MPIX_REQUEST_NULL;
};

struct Fft3d {
  int N1, N2, N3;
  int Pr, Pc, r, c;
  MPI_Comm row = MPI_COMM_NULL, col = MPI_COMM_NULL;

  // Local extents. x-pencil: N1 x ny_x x nz_x; y-pencil: nx_y x N2 x nz_x;
  // z-pencil: nx_y x ny_z x N3.
  Range yx, zx;  // x-pencil's y and z ranges
  Range xy;      // y-pencil's (and z-pencil's) x range
  Range yz;      // z-pencil's y range
  size_t size_x, size_y, size_z;

  std::vector<cplx> X, Y, Z, sbuf, rbuf;
  fftw_plan fx = nullptr, bx = nullptr, fy = nullptr, by = nullptr, fz = nullptr, bz = nullptr;

  Exchange xy_ex, yz_ex, zy_ex, yx_ex;
  bool persistent = false;
  bool poison = false;  // fill the receive buffer with NaN before every exchange

  double t_comm = 0;  // accumulated alltoallv time
  double t_tr = 0;    // accumulated transpose time (pack + alltoallv + unpack)

  Fft3d(int n1, int n2, int n3, int pr, int pc, int rank) : N1(n1), N2(n2), N3(n3), Pr(pr), Pc(pc) {
    r = rank / Pc;
    c = rank % Pc;
    MPI_Comm_split(MPI_COMM_WORLD, r, c, &row);
    MPI_Comm_split(MPI_COMM_WORLD, c, r, &col);
    MPI_Comm_set_errhandler(row, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(col, MPI_ERRORS_RETURN);
    yx = block(N2, Pc, c);
    zx = block(N3, Pr, r);
    xy = block(N1, Pc, c);
    yz = block(N2, Pr, r);
    size_x = size_t(N1) * yx.size * zx.size;
    size_y = size_t(xy.size) * N2 * zx.size;
    size_z = size_t(xy.size) * yz.size * N3;
    size_t m = std::max({size_x, size_y, size_z, size_t(1)});
    X.assign(std::max(size_x, size_t(1)), 0);
    Y.assign(std::max(size_y, size_t(1)), 0);
    Z.assign(std::max(size_z, size_t(1)), 0);
    sbuf.assign(m, 0);
    rbuf.assign(m, 0);
    if (m > size_t(std::numeric_limits<int>::max())) {
      std::fprintf(stderr, "mpia_fft3d: local block too large for int counts\n");
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
    make_plans();
    make_exchanges();
  }

  ~Fft3d() {
    free_requests();
    for (fftw_plan p : {fx, bx, fy, by, fz, bz})
      if (p) fftw_destroy_plan(p);
    MPI_Comm_free(&row);
    MPI_Comm_free(&col);
  }

  static fftw_plan plan_many(int n, int howmany, cplx* data, int sign) {
    if (howmany == 0 || n == 0) return nullptr;
    auto* d = reinterpret_cast<fftw_complex*>(data);
    fftw_plan p =
        fftw_plan_many_dft(1, &n, howmany, d, nullptr, 1, n, d, nullptr, 1, n, sign, FFTW_ESTIMATE);
    if (!p) {
      std::fprintf(stderr, "mpia_fft3d: fftw_plan_many_dft failed\n");
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return p;
  }

  void make_plans() {
    fx = plan_many(N1, yx.size * zx.size, X.data(), FFTW_FORWARD);
    bx = plan_many(N1, yx.size * zx.size, X.data(), FFTW_BACKWARD);
    fy = plan_many(N2, xy.size * zx.size, Y.data(), FFTW_FORWARD);
    by = plan_many(N2, xy.size * zx.size, Y.data(), FFTW_BACKWARD);
    fz = plan_many(N3, xy.size * yz.size, Z.data(), FFTW_FORWARD);
    bz = plan_many(N3, xy.size * yz.size, Z.data(), FFTW_BACKWARD);
  }

  static void exec(fftw_plan p) {
    if (p) fftw_execute(p);
  }

  static void displs(const std::vector<int>& counts, std::vector<int>& d) {
    d.assign(counts.size(), 0);
    for (size_t i = 1; i < counts.size(); ++i) d[i] = d[i - 1] + counts[i - 1];
  }

  void make_exchanges() {
    // x -> y in the row comm (peer p = column index): to p go x in block(N1,Pc,p), all my
    // y, my z; from q come my x, y in block(N2,Pc,q), my z.
    xy_ex.comm = yx_ex.comm = row;
    xy_ex.scounts.resize(Pc);
    xy_ex.rcounts.resize(Pc);
    for (int p = 0; p < Pc; ++p) {
      xy_ex.scounts[p] = block_size(N1, Pc, p) * yx.size * zx.size;
      xy_ex.rcounts[p] = xy.size * block_size(N2, Pc, p) * zx.size;
    }
    // y -> z in the column comm (peer p = row index): to p go y in block(N2,Pr,p), my x,
    // my z; from q come my x, my y (block(N2,Pr,r)), z in block(N3,Pr,q).
    yz_ex.comm = zy_ex.comm = col;
    yz_ex.scounts.resize(Pr);
    yz_ex.rcounts.resize(Pr);
    for (int p = 0; p < Pr; ++p) {
      yz_ex.scounts[p] = block_size(N2, Pr, p) * xy.size * zx.size;
      yz_ex.rcounts[p] = xy.size * yz.size * block_size(N3, Pr, p);
    }
    // The inverse transposes swap the roles.
    yx_ex.scounts = xy_ex.rcounts;
    yx_ex.rcounts = xy_ex.scounts;
    zy_ex.scounts = yz_ex.rcounts;
    zy_ex.rcounts = yz_ex.scounts;
    for (Exchange* e : {&xy_ex, &yz_ex, &zy_ex, &yx_ex}) {
      displs(e->scounts, e->sdispls);
      displs(e->rcounts, e->rdispls);
    }
  }

  // Creates the four persistent requests for an mpi-advance algorithm ("" = system: none).
  // Returns an MPI error code (the same on every rank for a bad algorithm name).
  int set_backend(const std::string& algorithm) {
    free_requests();
    persistent = !algorithm.empty();
    if (!persistent) return MPI_SUCCESS;
    Exchange* ex[] = {&xy_ex, &yz_ex, &zy_ex, &yx_ex};
    return init_requests(algorithm, 4, [&](int i, MPI_Info info) {
      Exchange* e = ex[i];
      return MPIX_Alltoallv_init(sbuf.data(), e->scounts.data(), e->sdispls.data(),
                                 MPI_C_DOUBLE_COMPLEX, rbuf.data(), e->rcounts.data(),
                                 e->rdispls.data(), MPI_C_DOUBLE_COMPLEX, e->comm, info, &e->req);
    });
  }

  void free_requests() {
    for (Exchange* e : {&xy_ex, &yz_ex, &zy_ex, &yx_ex})
      if (e->req != MPIX_REQUEST_NULL) MPIX_Request_free(&e->req);
    persistent = false;
  }

  std::string algorithm_names() {
    if (!persistent) return "MPI_Alltoallv";
    const MPIX_Request reqs[] = {xy_ex.req, yz_ex.req, zy_ex.req, yx_ex.req};
    return names_of(reqs, 4);
  }

  void exchange(Exchange& e) {
    if (poison)
      std::fill(rbuf.begin(), rbuf.end(), cplx(std::numeric_limits<double>::quiet_NaN(), 0.0));
    double t0 = MPI_Wtime();
    int err;
    if (persistent) {
      err = MPIX_Start(&e.req);
      if (err == MPI_SUCCESS) err = MPIX_Wait(&e.req, MPI_STATUS_IGNORE);
    } else {
      err = MPI_Alltoallv(sbuf.data(), e.scounts.data(), e.sdispls.data(), MPI_C_DOUBLE_COMPLEX,
                          rbuf.data(), e.rcounts.data(), e.rdispls.data(), MPI_C_DOUBLE_COMPLEX,
                          e.comm);
    }
    check_exchange(err, "alltoallv");
    t_comm += MPI_Wtime() - t0;
  }

  // x-pencil -> y-pencil.
  void transpose_xy() {
    double t0 = MPI_Wtime();
    const int ny = yx.size, nz = zx.size;
    for (int p = 0; p < Pc; ++p) {  // pack [z][y][x in block p]
      Range xr = block(N1, Pc, p);
      cplx* out = sbuf.data() + xy_ex.sdispls[p];
      for (int z = 0; z < nz; ++z)
        for (int y = 0; y < ny; ++y) {
          const cplx* in = X.data() + (size_t(z) * ny + y) * N1 + xr.start;
          out = std::copy(in, in + xr.size, out);
        }
    }
    exchange(xy_ex);
    const int nx = xy.size;
    for (int q = 0; q < Pc; ++q) {  // unpack [z][y in block q][x] into (z, x, y)
      Range yr = block(N2, Pc, q);
      const cplx* in = rbuf.data() + xy_ex.rdispls[q];
      for (int z = 0; z < nz; ++z)
        for (int y = 0; y < yr.size; ++y)
          for (int x = 0; x < nx; ++x) Y[(size_t(z) * nx + x) * N2 + yr.start + y] = *in++;
    }
    t_tr += MPI_Wtime() - t0;
  }

  // y-pencil -> x-pencil (inverse of transpose_xy).
  void transpose_yx() {
    double t0 = MPI_Wtime();
    const int nx = xy.size, nz = zx.size;
    for (int q = 0; q < Pc; ++q) {  // pack [z][y in block q][x]
      Range yr = block(N2, Pc, q);
      cplx* out = sbuf.data() + yx_ex.sdispls[q];
      for (int z = 0; z < nz; ++z)
        for (int y = 0; y < yr.size; ++y)
          for (int x = 0; x < nx; ++x) *out++ = Y[(size_t(z) * nx + x) * N2 + yr.start + y];
    }
    exchange(yx_ex);
    const int ny = yx.size;
    for (int p = 0; p < Pc; ++p) {  // unpack [z][y][x in block p]
      Range xr = block(N1, Pc, p);
      const cplx* in = rbuf.data() + yx_ex.rdispls[p];
      for (int z = 0; z < nz; ++z)
        for (int y = 0; y < ny; ++y) {
          std::copy(in, in + xr.size, X.data() + (size_t(z) * ny + y) * N1 + xr.start);
          in += xr.size;
        }
    }
    t_tr += MPI_Wtime() - t0;
  }

  // y-pencil -> z-pencil.
  void transpose_yz() {
    double t0 = MPI_Wtime();
    const int nx = xy.size, nz = zx.size;
    for (int p = 0; p < Pr; ++p) {  // pack [z][x][y in block p]
      Range yr = block(N2, Pr, p);
      cplx* out = sbuf.data() + yz_ex.sdispls[p];
      for (int z = 0; z < nz; ++z)
        for (int x = 0; x < nx; ++x) {
          const cplx* in = Y.data() + (size_t(z) * nx + x) * N2 + yr.start;
          out = std::copy(in, in + yr.size, out);
        }
    }
    exchange(yz_ex);
    const int ny = yz.size;
    for (int q = 0; q < Pr; ++q) {  // unpack [z in block q][x][y] into (y, x, z)
      Range zr = block(N3, Pr, q);
      const cplx* in = rbuf.data() + yz_ex.rdispls[q];
      for (int z = 0; z < zr.size; ++z)
        for (int x = 0; x < nx; ++x)
          for (int y = 0; y < ny; ++y) Z[(size_t(y) * nx + x) * N3 + zr.start + z] = *in++;
    }
    t_tr += MPI_Wtime() - t0;
  }

  // z-pencil -> y-pencil (inverse of transpose_yz).
  void transpose_zy() {
    double t0 = MPI_Wtime();
    const int nx = xy.size, ny = yz.size;
    for (int q = 0; q < Pr; ++q) {  // pack [z in block q][x][y]
      Range zr = block(N3, Pr, q);
      cplx* out = sbuf.data() + zy_ex.sdispls[q];
      for (int z = 0; z < zr.size; ++z)
        for (int x = 0; x < nx; ++x)
          for (int y = 0; y < ny; ++y) *out++ = Z[(size_t(y) * nx + x) * N3 + zr.start + z];
    }
    exchange(zy_ex);
    const int nz = zx.size;
    for (int p = 0; p < Pr; ++p) {  // unpack [z][x][y in block p]
      Range yr = block(N2, Pr, p);
      const cplx* in = rbuf.data() + zy_ex.rdispls[p];
      for (int z = 0; z < nz; ++z)
        for (int x = 0; x < nx; ++x) {
          std::copy(in, in + yr.size, Y.data() + (size_t(z) * nx + x) * N2 + yr.start);
          in += yr.size;
        }
    }
    t_tr += MPI_Wtime() - t0;
  }

  // X (x-pencils) -> Z (z-pencils), unnormalised forward transform.
  void forward() {
    exec(fx);
    transpose_xy();
    exec(fy);
    transpose_yz();
    exec(fz);
  }

  // Z -> X, normalised by N1*N2*N3.
  void inverse() {
    exec(bz);
    transpose_zy();
    exec(by);
    transpose_yx();
    exec(bx);
    const double s = 1.0 / (double(N1) * N2 * N3);
    for (size_t i = 0; i < size_x; ++i) X[i] *= s;
  }

  // Fill the x-pencil from a function of the global indices.
  template <class F>
  void fill_x(F f) {
    for (int z = 0; z < zx.size; ++z)
      for (int y = 0; y < yx.size; ++y)
        for (int x = 0; x < N1; ++x)
          X[(size_t(z) * yx.size + y) * N1 + x] = f(x, yx.start + y, zx.start + z);
  }
};

// max() that turns a NaN into +inf, so that a NaN error is never silently dropped.
double errmax(double acc, double e) {
  return std::isnan(e) ? std::numeric_limits<double>::infinity() : std::max(acc, e);
}

// Deterministic pseudo-random value of a global index, in [-1, 1) + i [-1, 1).
cplx random_value(int x, int y, int z) {
  uint64_t h = (uint64_t(x) * 0x9E3779B97F4A7C15ULL) ^ (uint64_t(y) * 0xC2B2AE3D27D4EB4FULL) ^
               (uint64_t(z) * 0x165667B19E3779F9ULL) ^ 0x27D4EB2F165667C5ULL;
  auto mix = [](uint64_t v) {
    v ^= v >> 33;
    v *= 0xff51afd7ed558ccdULL;
    v ^= v >> 33;
    v *= 0xc4ceb9fe1a85ec53ULL;
    v ^= v >> 33;
    return v;
  };
  uint64_t a = mix(h), b = mix(h + 0x9E3779B97F4A7C15ULL);
  return {double(a >> 11) * 0x1.0p-52 - 1.0, double(b >> 11) * 0x1.0p-52 - 1.0};
}

double allreduce_max(double v) {
  double out = 0;
  MPI_Allreduce(&v, &out, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return out;
}

// Forward transform of a plane wave: N1*N2*N3 at (k1, k2, k3), zero elsewhere. Returns the
// largest error relative to N1*N2*N3, max over ranks.
double check_plane_wave(Fft3d& f) {
  const int k1 = 1 % f.N1, k2 = 2 % f.N2, k3 = (f.N3 - 1) % f.N3;  // k3 = -1
  const double tp = 2.0 * 3.14159265358979323846;
  f.fill_x([&](int x, int y, int z) {
    // Reduce the phase modulo 1 first for accuracy.
    double ph = double((int64_t(k1) * x) % f.N1) / f.N1 + double((int64_t(k2) * y) % f.N2) / f.N2 +
                double((int64_t(k3) * z) % f.N3) / f.N3;
    return std::polar(1.0, tp * ph);
  });
  f.forward();
  const double total = double(f.N1) * f.N2 * f.N3;
  double err = 0;
  for (int y = 0; y < f.yz.size; ++y)
    for (int x = 0; x < f.xy.size; ++x)
      for (int z = 0; z < f.N3; ++z) {
        int gx = f.xy.start + x, gy = f.yz.start + y;
        cplx expect = (gx == k1 && gy == k2 && z == k3) ? cplx(total, 0) : cplx(0, 0);
        cplx got = f.Z[(size_t(y) * f.xy.size + x) * f.N3 + z];
        err = errmax(err, std::abs(got - expect) / total);
      }
  return allreduce_max(err);
}

// Forward transform of pseudo-random data gathered on rank 0 and compared with a serial
// 3D FFTW of the whole grid. Returns the relative error (max |diff| / max |ref|) on every rank.
double check_serial(Fft3d& f, int rank, int nprocs) {
  f.fill_x(random_value);
  f.forward();
  const int N1 = f.N1, N2 = f.N2, N3 = f.N3;
  // Every rank sends its z-pencil; rank 0 knows where each one goes.
  int mine = int(f.size_z);
  std::vector<int> counts(nprocs), displs(nprocs);
  MPI_Gather(&mine, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  size_t total = 0;
  if (rank == 0)
    for (int i = 0; i < nprocs; ++i) {
      displs[i] = int(total);
      total += size_t(counts[i]);
    }
  std::vector<cplx> all(rank == 0 ? std::max(total, size_t(1)) : 1);
  MPI_Gatherv(f.Z.data(), mine, MPI_C_DOUBLE_COMPLEX, all.data(), counts.data(), displs.data(),
              MPI_C_DOUBLE_COMPLEX, 0, MPI_COMM_WORLD);
  double err = 0;
  if (rank == 0) {
    // Reference: row-major [x][y][z] with z fastest.
    std::vector<cplx> ref(size_t(N1) * N2 * N3);
    for (int x = 0; x < N1; ++x)
      for (int y = 0; y < N2; ++y)
        for (int z = 0; z < N3; ++z) ref[(size_t(x) * N2 + y) * N3 + z] = random_value(x, y, z);
    auto* d = reinterpret_cast<fftw_complex*>(ref.data());
    fftw_plan p = fftw_plan_dft_3d(N1, N2, N3, d, d, FFTW_FORWARD, FFTW_ESTIMATE);
    fftw_execute(p);
    fftw_destroy_plan(p);
    double refmax = 0;
    for (const cplx& v : ref) refmax = std::max(refmax, std::abs(v));
    double diff = 0;
    for (int i = 0; i < nprocs; ++i) {
      Range xr = block(N1, f.Pc, i % f.Pc), yr = block(N2, f.Pr, i / f.Pc);
      const cplx* z = all.data() + displs[i];
      for (int y = 0; y < yr.size; ++y)
        for (int x = 0; x < xr.size; ++x)
          for (int k = 0; k < N3; ++k) {
            cplx got = z[(size_t(y) * xr.size + x) * N3 + k];
            cplx want = ref[(size_t(xr.start + x) * N2 + yr.start + y) * N3 + k];
            diff = errmax(diff, std::abs(got - want));
          }
    }
    err = diff / std::max(refmax, 1e-300);
  }
  MPI_Bcast(&err, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  return err;
}

// ---------------------------------------------------------------------------------------------
// The 1-D FFT of N = P^2 * M points (--1d M; the header comment)
// ---------------------------------------------------------------------------------------------
struct Fft1d {
  int P, r, M;
  long long N;
  size_t size_x;  // P * M: the points of each rank, in and out
  // X: the input (and the inverse's output); A: transpose 1's packed send buffer; B: its
  // receive buffer, the n1 = r column; C: transpose 2's receive buffer; D: the spectrum.
  std::vector<cplx> X, A, B, C, D, tw;
  fftw_plan f2 = nullptr, b2 = nullptr, f1 = nullptr, b1 = nullptr;
  // The three transposes: A -> B, B -> C, C -> D.
  MPIX_Request req[3] = {MPIX_REQUEST_NULL, MPIX_REQUEST_NULL, MPIX_REQUEST_NULL};
  bool persistent = false;
  bool poison = false;
  double t_comm = 0, t_tr = 0;
  MPI_Comm comm = MPI_COMM_NULL;  // MPI_COMM_WORLD's duplicate, errors returned

  Fft1d(int p, int rank, int m)
      : P(p), r(rank), M(m), N((long long)p * p * m), size_x(size_t(p) * m) {
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    if (size_x > size_t(std::numeric_limits<int>::max())) {
      std::fprintf(stderr, "mpia_fft3d: --1d: P * M too large for int counts\n");
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
    for (auto* v : {&X, &A, &B, &C, &D}) v->assign(size_x, 0);
    // W_N^(r * k2), the phase reduced modulo N first for accuracy.
    const double tp = 2.0 * 3.14159265358979323846;
    tw.resize(size_x);
    for (size_t k2 = 0; k2 < size_x; ++k2)
      tw[k2] = std::polar(1.0, -tp * double((long long)r * (long long)k2 % N) / double(N));
    const int n2 = int(size_x);
    auto* b = reinterpret_cast<fftw_complex*>(B.data());
    auto* c = reinterpret_cast<fftw_complex*>(C.data());
    f2 = fftw_plan_dft_1d(n2, b, b, FFTW_FORWARD, FFTW_ESTIMATE);
    b2 = fftw_plan_dft_1d(n2, b, b, FFTW_BACKWARD, FFTW_ESTIMATE);
    // M transforms of P points, stride M: C[n1 * M + j].
    f1 = fftw_plan_many_dft(1, &P, M, c, nullptr, M, 1, c, nullptr, M, 1, FFTW_FORWARD,
                            FFTW_ESTIMATE);
    b1 = fftw_plan_many_dft(1, &P, M, c, nullptr, M, 1, c, nullptr, M, 1, FFTW_BACKWARD,
                            FFTW_ESTIMATE);
    if (!f2 || !b2 || !f1 || !b1) {
      std::fprintf(stderr, "mpia_fft3d: --1d: an FFTW plan failed\n");
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
  }
  Fft1d(const Fft1d&) = delete;
  Fft1d& operator=(const Fft1d&) = delete;

  ~Fft1d() {
    free_requests();
    for (fftw_plan p : {f2, b2, f1, b1}) fftw_destroy_plan(p);
    MPI_Comm_free(&comm);
  }

  cplx* send_of(int t) { return t == 0 ? A.data() : t == 1 ? B.data() : C.data(); }
  cplx* recv_of(int t) { return t == 0 ? B.data() : t == 1 ? C.data() : D.data(); }

  int set_backend(const std::string& algorithm) {
    free_requests();
    persistent = !algorithm.empty();
    if (!persistent) return MPI_SUCCESS;
    return init_requests(algorithm, 3, [&](int t, MPI_Info info) {
      return MPIX_Alltoall_init(send_of(t), M, MPI_C_DOUBLE_COMPLEX, recv_of(t), M,
                                MPI_C_DOUBLE_COMPLEX, comm, info, &req[t]);
    });
  }

  void free_requests() {
    for (MPIX_Request& q : req)
      if (q != MPIX_REQUEST_NULL) MPIX_Request_free(&q);
    persistent = false;
  }

  std::string algorithm_names() { return persistent ? names_of(req, 3) : "MPI_Alltoall"; }

  void exchange(int t) {
    cplx* out = recv_of(t);
    if (poison) std::fill(out, out + size_x, cplx(std::numeric_limits<double>::quiet_NaN(), 0.0));
    double t0 = MPI_Wtime();
    int err;
    if (persistent) {
      err = MPIX_Start(&req[t]);
      if (err == MPI_SUCCESS) err = MPIX_Wait(&req[t], MPI_STATUS_IGNORE);
    } else {
      err = MPI_Alltoall(send_of(t), M, MPI_C_DOUBLE_COMPLEX, out, M, MPI_C_DOUBLE_COMPLEX, comm);
    }
    check_exchange(err, "alltoall");
    const double dt = MPI_Wtime() - t0;
    t_comm += dt;
    t_tr += dt;
  }

  // in (natural order) -> D (natural order): the forward or the backward DFT, unnormalised.
  void transform(const std::vector<cplx>& in, bool forward) {
    double t0 = MPI_Wtime();
    for (int t = 0; t < P; ++t)  // to rank t: n1 = t, my M values of n2
      for (int a = 0; a < M; ++a) A[size_t(t) * M + a] = in[size_t(t) + size_t(P) * a];
    t_tr += MPI_Wtime() - t0;
    exchange(0);  // B[s*M + a] = x[n1 = r, n2 = s*M + a]
    fftw_execute(forward ? f2 : b2);
    if (forward)
      for (size_t k = 0; k < size_x; ++k) B[k] *= tw[k];
    else
      for (size_t k = 0; k < size_x; ++k) B[k] *= std::conj(tw[k]);
    exchange(1);  // C[n1*M + j] = y[n1, k2 = r*M + j]
    fftw_execute(forward ? f1 : b1);
    exchange(2);  // D[u*M + j] = X[k1 = r, k2 = u*M + j] = X[r*P*M + u*M + j]
  }

  void forward() { transform(X, true); }

  void inverse() {
    transform(D, false);
    const double s = 1.0 / double(N);
    for (size_t i = 0; i < size_x; ++i) X[i] = D[i] * s;
  }

  template <class F>
  void fill_x(F f) {
    const long long base = (long long)r * (long long)size_x;
    for (size_t i = 0; i < size_x; ++i) X[i] = f(base + (long long)i);
  }
};

// Forward transform of a tone exp(2 pi i f n / N): N at f, 0 elsewhere, on every rank's every
// point. Returns the largest error relative to N, max over ranks.
double check_tone(Fft1d& f) {
  const long long k = (f.N / 3 + f.P + 1) % f.N;  // neither k1 nor k2 zero where N allows
  const double tp = 2.0 * 3.14159265358979323846;
  // k * n mod N in 128 bits: k * n overflows 64 bits from N ~ 3e9 (P = 16384, M = 64: 1.7e10).
  f.fill_x([&](long long n) {
    const auto kn = (unsigned __int128)k * (unsigned __int128)n % (unsigned __int128)f.N;
    return std::polar(1.0, tp * double((long long)kn) / double(f.N));
  });
  f.forward();
  const long long base = (long long)f.r * (long long)f.size_x;
  double err = 0;
  for (size_t i = 0; i < f.size_x; ++i) {
    cplx expect = base + (long long)i == k ? cplx(double(f.N), 0) : cplx(0, 0);
    err = errmax(err, std::abs(f.D[i] - expect) / double(f.N));
  }
  return allreduce_max(err);
}

// Pseudo-random data, transformed, gathered on rank 0 and compared with a serial 1-D FFTW.
double check_serial_1d(Fft1d& f, int rank) {
  auto value = [](long long n) { return random_value(int(n % 65521), int(n / 65521), 7); };
  f.fill_x(value);
  f.forward();
  std::vector<cplx> all(rank == 0 ? size_t(f.N) : 1);
  MPI_Gather(f.D.data(), int(f.size_x), MPI_C_DOUBLE_COMPLEX, all.data(), int(f.size_x),
             MPI_C_DOUBLE_COMPLEX, 0, MPI_COMM_WORLD);
  double err = 0;
  if (rank == 0) {
    std::vector<cplx> ref(size_t(f.N));
    for (long long n = 0; n < f.N; ++n) ref[size_t(n)] = value(n);
    auto* d = reinterpret_cast<fftw_complex*>(ref.data());
    fftw_plan p = fftw_plan_dft_1d(int(f.N), d, d, FFTW_FORWARD, FFTW_ESTIMATE);
    fftw_execute(p);
    fftw_destroy_plan(p);
    double refmax = 0, diff = 0;
    for (size_t i = 0; i < ref.size(); ++i) {
      refmax = std::max(refmax, std::abs(ref[i]));
      diff = errmax(diff, std::abs(all[i] - ref[i]));
    }
    err = diff / std::max(refmax, 1e-300);
  }
  MPI_Bcast(&err, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  return err;
}

struct Result {
  std::string backend, algorithm;
  double comm_ms = 0, tr_ms = 0, total_ms = 0, err = 0;
  bool ok = false;
};

// Every backend on f (Fft3d or Fft1d): its requests made, an untimed round trip with poisoned
// receive buffers, then the timed forward + inverse transforms of input.
template <class F>
std::vector<Result> run_backends(F& f, const Options& opt, const std::vector<cplx>& input,
                                 const char* init_call, int rank, int nprocs, int& exit_code) {
  std::vector<Result> results;
  double inmax = 0;
  for (auto& v : input) inmax = std::max(inmax, std::abs(v));
  inmax = allreduce_max(inmax);
  for (const std::string& b : opt.backends) {
    Result res;
    res.backend = b;
    int err = f.set_backend(b == "system" ? "" : b);
    int failed = err != MPI_SUCCESS, first = nprocs;
    MPI_Allreduce(failed ? &rank : &nprocs, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (first < nprocs) {
      if (rank == first) {
        char msg[MPI_MAX_ERROR_STRING];
        int len = 0;
        MPI_Error_string(err, msg, &len);
        std::fprintf(stderr, "mpia_fft3d: backend %s: %s failed on rank %d: %s\n", b.c_str(),
                     init_call, rank, msg);
      }
      f.free_requests();
      exit_code = 1;
      res.algorithm = "init failed";
      results.push_back(res);
      continue;
    }
    res.algorithm = f.algorithm_names();
    double comm = 0, tr = 0, total = 0, rt_err = 0;
    // An untimed round trip with the receive buffer poisoned before every exchange:
    // an element the backend fails to deliver shows up as NaN.
    std::copy(input.begin(), input.end(), f.X.begin());
    f.poison = true;
    f.forward();
    f.inverse();
    f.poison = false;
    for (size_t i = 0; i < f.size_x; ++i) rt_err = errmax(rt_err, std::abs(f.X[i] - input[i]));
    for (int it = 0; it < opt.warmup + opt.iters; ++it) {
      std::copy(input.begin(), input.end(), f.X.begin());
      f.t_comm = f.t_tr = 0;
      MPI_Barrier(MPI_COMM_WORLD);
      double t0 = MPI_Wtime();
      f.forward();
      f.inverse();
      double t = MPI_Wtime() - t0;
      double e = 0;
      for (size_t i = 0; i < f.size_x; ++i) e = errmax(e, std::abs(f.X[i] - input[i]));
      rt_err = errmax(rt_err, e);
      if (it >= opt.warmup) {
        comm += f.t_comm;
        tr += f.t_tr;
        total += t;
      }
    }
    f.free_requests();
    double loc[3] = {comm / opt.iters, tr / opt.iters, total / opt.iters}, mx[3];
    MPI_Reduce(loc, mx, 3, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    res.comm_ms = mx[0] * 1e3;
    res.tr_ms = mx[1] * 1e3;
    res.total_ms = mx[2] * 1e3;
    res.err = allreduce_max(rt_err) / std::max(inmax, 1e-300);
    res.ok = res.err <= opt.tol;
    if (!res.ok) {
      exit_code = 1;
      if (rank == 0)
        std::printf("backend %s: round trip error %.3e > %.1e FAILED\n", b.c_str(), res.err,
                    opt.tol);
    }
    results.push_back(res);
  }
  return results;
}

// Prints one check's line on rank 0; a failed check sets exit_code.
void report_check(const char* what, double err, double tol, int rank, int& exit_code) {
  const bool ok = err <= tol;
  if (rank == 0) std::printf("check %s: error %.3e %s\n", what, err, ok ? "ok" : "FAILED");
  if (!ok) exit_code = 1;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, nprocs = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
  Options opt = parse_options(argc, argv, rank);
  const bool one_d = opt.m1d > 0;

  // Registered algorithms of the collective behind the transposes.
  const char* collective = one_d ? "alltoall" : "alltoallv";
  std::vector<std::string> registry;
  for (int i = 0;; ++i) {
    const char *name = nullptr, *desc = nullptr;
    if (MPIX_Algorithm_get(collective, i, &name, &desc) != MPI_SUCCESS) break;
    registry.push_back(name);
  }
  if (opt.backends.empty()) {
    opt.backends.push_back("system");
    for (auto& n : registry)
      if (n != "system") opt.backends.push_back(n);
  }
  for (auto& b : opt.backends) {
    std::string base = b.substr(0, b.find(':'));
    if (b != "system" && std::find(registry.begin(), registry.end(), base) == registry.end())
      usage_error(rank, "unknown backend '" + b + "' (" + collective + ")");
  }

  int dims[2] = {opt.grid[0], opt.grid[1]};
  if (one_d) {
    dims[0] = nprocs;
    dims[1] = 1;
  } else {
    if (dims[0] * dims[1] != 0 && dims[0] * dims[1] != nprocs)
      usage_error(rank, "--grid Pr,Pc must multiply to the number of ranks");
    if (dims[0] == 0 || dims[1] == 0) {
      dims[0] = dims[1] = 0;
      MPI_Dims_create(nprocs, 2, dims);
    }
  }
  const int Pr = dims[0], Pc = dims[1];

  int exit_code = 0;
  std::vector<Result> results;
  long long points = 0;
  if (one_d) {
    Fft1d f(nprocs, rank, opt.m1d);
    points = f.N;
    if (rank == 0)
      std::printf(
          "mpia_fft3d: 1-D FFT of %lld = %d^2 x %d complex points, %d ranks, alltoall blocks of "
          "%d B, %d timed iterations (+%d warm-up)\n",
          f.N, nprocs, f.M, nprocs, 16 * f.M, opt.iters, opt.warmup);
    f.set_backend("");
    report_check("tone -> delta", check_tone(f), opt.tol, rank, exit_code);
    if (points <= opt.serial_max)
      report_check("vs serial FFTW of the whole N", check_serial_1d(f, rank), opt.tol, rank,
                   exit_code);
    else if (rank == 0)
      std::printf("check vs serial FFTW: skipped (%lld points > --serial-max %lld)\n", points,
                  opt.serial_max);
    f.fill_x([](long long n) { return random_value(int(n % 4099), int(n / 4099), 3); });
    const std::vector<cplx> input(f.X);
    results = run_backends(f, opt, input, "MPIX_Alltoall_init", rank, nprocs, exit_code);
  } else {
    Fft3d f(opt.n[0], opt.n[1], opt.n[2], Pr, Pc, rank);
    points = (long long)f.N1 * f.N2 * f.N3;
    if (rank == 0)
      std::printf(
          "mpia_fft3d: %d x %d x %d complex grid, %d ranks as %d x %d pencils, "
          "%d timed iterations (+%d warm-up)\n",
          f.N1, f.N2, f.N3, nprocs, Pr, Pc, opt.iters, opt.warmup);

    // Independent checks of the forward transform, with MPI_Alltoallv.
    f.set_backend("");
    report_check("plane wave -> delta", check_plane_wave(f), opt.tol, rank, exit_code);
    if (points <= opt.serial_max)
      report_check("vs serial FFTW of the whole grid", check_serial(f, rank, nprocs), opt.tol, rank,
                   exit_code);
    else if (rank == 0)
      std::printf("check vs serial FFTW: skipped (%lld points > --serial-max %lld)\n", points,
                  opt.serial_max);
    f.fill_x(random_value);
    const std::vector<cplx> input(f.X.begin(), f.X.begin() + f.size_x);
    results = run_backends(f, opt, input, "MPIX_Alltoallv_init", rank, nprocs, exit_code);
  }

  if (rank == 0) {
    const Result* sys = nullptr;
    for (auto& r : results)
      if (r.backend == "system" && r.algorithm != "init failed") sys = &r;
    auto ratio = [&](double v, double s) -> std::string {
      if (!sys || s <= 0 || v <= 0) return "-";
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.3f", v / s);
      return buf;
    };
    std::printf("\n%-28s %-28s %11s %11s %11s %9s %9s %10s\n", "backend", "algorithm",
                one_d ? "a2a ms" : "a2av ms", "transp ms", "total ms", "tr/sys", "tot/sys",
                "rt error");
    for (auto& r : results)
      std::printf("%-28s %-28s %11.4f %11.4f %11.4f %9s %9s %10.2e%s\n", r.backend.c_str(),
                  r.algorithm.c_str(), r.comm_ms, r.tr_ms, r.total_ms,
                  ratio(r.tr_ms, sys ? sys->tr_ms : 0).c_str(),
                  ratio(r.total_ms, sys ? sys->total_ms : 0).c_str(), r.err, r.ok ? "" : " FAILED");
    std::printf(
        "(times per forward + inverse: mean over iterations, max over ranks; "
        "%s, transp = pack + %s + unpack)\n",
        one_d ? "a2a = the 6 alltoall calls" : "a2av = alltoallv calls",
        one_d ? "alltoall" : "alltoallv");
    if (!opt.csv.empty()) {
      FILE* fp = std::fopen(opt.csv.c_str(), "w");
      if (!fp) {
        std::fprintf(stderr, "mpia_fft3d: cannot write %s\n", opt.csv.c_str());
        exit_code = 1;
      } else {
        // --1d: n1 = N, n2 = n3 = 1, pr = P, pc = 1; the last column says which transform.
        std::fprintf(fp,
                     "backend,algorithm,nprocs,pr,pc,n1,n2,n3,iters,alltoallv_ms,"
                     "transpose_ms,total_ms,transpose_ratio_vs_system,"
                     "total_ratio_vs_system,roundtrip_rel_error,ok,transform\n");
        const long long n1 = one_d ? points : opt.n[0];
        const int n2 = one_d ? 1 : opt.n[1], n3 = one_d ? 1 : opt.n[2];
        const std::string kind = one_d ? "1d:m=" + std::to_string(opt.m1d) : "3d";
        for (auto& r : results) {
          std::string tr = ratio(r.tr_ms, sys ? sys->tr_ms : 0);
          std::string tt = ratio(r.total_ms, sys ? sys->total_ms : 0);
          std::fprintf(fp, "\"%s\",\"%s\",%d,%d,%d,%lld,%d,%d,%d,%.6f,%.6f,%.6f,%s,%s,%.3e,%d,%s\n",
                       r.backend.c_str(), r.algorithm.c_str(), nprocs, Pr, Pc, n1, n2, n3,
                       opt.iters, r.comm_ms, r.tr_ms, r.total_ms, tr == "-" ? "" : tr.c_str(),
                       tt == "-" ? "" : tt.c_str(), r.err, r.ok ? 1 : 0, kind.c_str());
        }
        std::fclose(fp);
      }
    }
  }
  MPI_Bcast(&exit_code, 1, MPI_INT, 0, MPI_COMM_WORLD);
  // Every rank's plans are gone before any rank frees FFTW's state: under SMPI the simulated
  // ranks share one FFTW (its planner state is global, and fftw_cleanup undefines every plan).
  MPI_Barrier(MPI_COMM_WORLD);
  fftw_cleanup();
  MPI_Finalize();
  return exit_code;
}
