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
};

[[noreturn]] void usage_error(int rank, const std::string& msg) {
  if (rank == 0) {
    std::fprintf(stderr,
                 "mpia_fft3d: %s\n"
                 "usage: mpia_fft3d [--n N | --dims N1,N2,N3] [--grid Pr,Pc] [--iters K]\n"
                 "                  [--warmup W] [--backends b1,b2,...] [--csv FILE]\n"
                 "                  [--tol T] [--serial-max POINTS]\n"
                 "backends: system (MPI_Alltoallv) or an mpi-advance alltoallv algorithm\n"
                 "          (name[:key=value], e.g. bruck:radix=4); default: all\n",
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
      o.backends = split(value(), ',');
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
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, MPIX_INFO_KEY_ALGORITHM, algorithm.c_str());
    int rc = MPI_SUCCESS;
    for (Exchange* e : {&xy_ex, &yz_ex, &zy_ex, &yx_ex}) {
      int err = MPIX_Alltoallv_init(
          sbuf.data(), e->scounts.data(), e->sdispls.data(), MPI_C_DOUBLE_COMPLEX, rbuf.data(),
          e->rcounts.data(), e->rdispls.data(), MPI_C_DOUBLE_COMPLEX, e->comm, info, &e->req);
      if (err != MPI_SUCCESS) rc = err;
    }
    MPI_Info_free(&info);
    return rc;
  }

  void free_requests() {
    for (Exchange* e : {&xy_ex, &yz_ex, &zy_ex, &yx_ex})
      if (e->req != MPIX_REQUEST_NULL) MPIX_Request_free(&e->req);
    persistent = false;
  }

  std::string algorithm_names() {
    if (!persistent) return "MPI_Alltoallv";
    std::vector<std::string> names;
    for (Exchange* e : {&xy_ex, &yz_ex, &zy_ex, &yx_ex}) {
      char buf[MPIX_MAX_ALGORITHM_STRING];
      int len = 0;
      if (MPIX_Request_get_algorithm(e->req, buf, &len) != MPI_SUCCESS) continue;
      std::string s(buf, len);
      if (std::find(names.begin(), names.end(), s) == names.end()) names.push_back(s);
    }
    std::string out;
    for (auto& s : names) out += (out.empty() ? "" : "|") + s;
    return out;
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
    if (err != MPI_SUCCESS) {
      char msg[MPI_MAX_ERROR_STRING];
      int len = 0;
      MPI_Error_string(err, msg, &len);
      std::fprintf(stderr, "mpia_fft3d: alltoallv failed: %s\n", msg);
      MPI_Abort(MPI_COMM_WORLD, 3);
    }
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

struct Result {
  std::string backend, algorithm;
  double comm_ms = 0, tr_ms = 0, total_ms = 0, err = 0;
  bool ok = false;
};

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, nprocs = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
  Options opt = parse_options(argc, argv, rank);

  // Registered alltoallv algorithms.
  std::vector<std::string> registry;
  for (int i = 0;; ++i) {
    const char *name = nullptr, *desc = nullptr;
    if (MPIX_Algorithm_get("alltoallv", i, &name, &desc) != MPI_SUCCESS) break;
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
      usage_error(rank, "unknown backend '" + b + "'");
  }

  int dims[2] = {opt.grid[0], opt.grid[1]};
  if (dims[0] * dims[1] != 0 && dims[0] * dims[1] != nprocs)
    usage_error(rank, "--grid Pr,Pc must multiply to the number of ranks");
  if (dims[0] == 0 || dims[1] == 0) {
    dims[0] = dims[1] = 0;
    MPI_Dims_create(nprocs, 2, dims);
  }
  const int Pr = dims[0], Pc = dims[1];

  int exit_code = 0;
  std::vector<Result> results;
  {
    Fft3d f(opt.n[0], opt.n[1], opt.n[2], Pr, Pc, rank);
    if (rank == 0)
      std::printf(
          "mpia_fft3d: %d x %d x %d complex grid, %d ranks as %d x %d pencils, "
          "%d timed iterations (+%d warm-up)\n",
          f.N1, f.N2, f.N3, nprocs, Pr, Pc, opt.iters, opt.warmup);

    // Independent checks of the forward transform, with MPI_Alltoallv.
    f.set_backend("");
    double pw = check_plane_wave(f);
    bool pw_ok = pw <= opt.tol;
    if (rank == 0)
      std::printf("check plane wave -> delta: error %.3e %s\n", pw, pw_ok ? "ok" : "FAILED");
    if (!pw_ok) exit_code = 1;
    const long long points = (long long)f.N1 * f.N2 * f.N3;
    if (points <= opt.serial_max) {
      double se = check_serial(f, rank, nprocs);
      bool se_ok = se <= opt.tol;
      if (rank == 0)
        std::printf("check vs serial FFTW of the whole grid: error %.3e %s\n", se,
                    se_ok ? "ok" : "FAILED");
      if (!se_ok) exit_code = 1;
    } else if (rank == 0) {
      std::printf("check vs serial FFTW: skipped (%lld points > --serial-max %lld)\n", points,
                  opt.serial_max);
    }

    std::vector<cplx> input(f.size_x);
    f.fill_x(random_value);
    std::copy(f.X.begin(), f.X.begin() + f.size_x, input.begin());
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
          std::fprintf(stderr,
                       "mpia_fft3d: backend %s: MPIX_Alltoallv_init failed on rank %d: %s\n",
                       b.c_str(), rank, msg);
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
    std::printf("\n%-28s %-28s %11s %11s %11s %9s %9s %10s\n", "backend", "algorithm", "a2a ms",
                "transp ms", "total ms", "tr/sys", "tot/sys", "rt error");
    for (auto& r : results)
      std::printf("%-28s %-28s %11.4f %11.4f %11.4f %9s %9s %10.2e%s\n", r.backend.c_str(),
                  r.algorithm.c_str(), r.comm_ms, r.tr_ms, r.total_ms,
                  ratio(r.tr_ms, sys ? sys->tr_ms : 0).c_str(),
                  ratio(r.total_ms, sys ? sys->total_ms : 0).c_str(), r.err, r.ok ? "" : " FAILED");
    std::printf(
        "(times per forward + inverse: mean over iterations, max over ranks; "
        "a2a = alltoallv calls, transp = pack + alltoallv + unpack)\n");
    if (!opt.csv.empty()) {
      FILE* fp = std::fopen(opt.csv.c_str(), "w");
      if (!fp) {
        std::fprintf(stderr, "mpia_fft3d: cannot write %s\n", opt.csv.c_str());
        exit_code = 1;
      } else {
        std::fprintf(fp,
                     "backend,algorithm,nprocs,pr,pc,n1,n2,n3,iters,alltoallv_ms,"
                     "transpose_ms,total_ms,transpose_ratio_vs_system,"
                     "total_ratio_vs_system,roundtrip_rel_error,ok\n");
        for (auto& r : results) {
          std::string tr = ratio(r.tr_ms, sys ? sys->tr_ms : 0);
          std::string tt = ratio(r.total_ms, sys ? sys->total_ms : 0);
          std::fprintf(fp, "%s,\"%s\",%d,%d,%d,%d,%d,%d,%d,%.6f,%.6f,%.6f,%s,%s,%.3e,%d\n",
                       r.backend.c_str(), r.algorithm.c_str(), nprocs, Pr, Pc, opt.n[0], opt.n[1],
                       opt.n[2], opt.iters, r.comm_ms, r.tr_ms, r.total_ms,
                       tr == "-" ? "" : tr.c_str(), tt == "-" ? "" : tt.c_str(), r.err,
                       r.ok ? 1 : 0);
        }
        std::fclose(fp);
      }
    }
  }
  MPI_Bcast(&exit_code, 1, MPI_INT, 0, MPI_COMM_WORLD);
  fftw_cleanup();
  MPI_Finalize();
  return exit_code;
}
