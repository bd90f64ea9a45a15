// bench_allreduce: the MPI communicator's allreduce (a ring of point-to-point messages, host
// sums) on this machine's ranks, for message sizes from 8 bytes to 64 MiB: the median seconds
// of each size, and the alpha and beta of t = 2 (N-1) alpha + 2 (N-1)/N n beta that
// docs/DISTRIBUTED.md's cost model takes for loopback. Run under mpirun; rank 0 prints.
//   mpirun -np 2 build/bench/bench_allreduce [--rounds 15] [--json]
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "core/tensor.h"
#include "dist/communicators.h"

using namespace frugal;

int main(int argc, char** argv) {
  CLI::App app{"Times the MPI communicator's allreduce per message size (run under mpirun)"};
  int rounds = 15;
  bool json = false;
  app.add_option("--rounds", rounds, "Timed allreduces per size (median reported)")
      ->check(CLI::Range(1, 100000));
  app.add_flag("--json", json, "One JSON line per size");
  CLI11_PARSE(app, argc, argv);
  std::unique_ptr<Communicator> comm = mpi_communicator();
  const int N = comm->size();
  std::vector<double> sizes, medians;
  for (int64_t n = 2; n <= (int64_t{16} << 20); n *= 4) {
    Tensor x = Tensor::zeros({n}, DType::f32);
    comm->allreduce_sum(x).wait();  // warm-up
    std::vector<double> t;
    for (int r = 0; r < rounds; ++r) {
      comm->barrier().wait();
      const auto start = std::chrono::steady_clock::now();
      comm->allreduce_sum(x).wait();
      t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    std::sort(t.begin(), t.end());
    const double median = t[t.size() / 2];
    sizes.push_back(double(n) * 4);
    medians.push_back(median);
    if (comm->rank() != 0) continue;
    if (json)
      std::printf("{\"ranks\": %d, \"bytes\": %lld, \"median_s\": %.9f, \"rounds\": %d}\n", N,
                  static_cast<long long>(n * 4), median, rounds);
    else
      std::printf("%d ranks, %10lld bytes: %.6f s (median of %d), %.2f GB/s algorithm bandwidth\n",
                  N, static_cast<long long>(n * 4), median, rounds, double(n) * 4 / median / 1e9);
  }
  if (comm->rank() == 0 && N > 1 && !json) {
    // alpha from the small messages (latency alone: the median of those up to 512 bytes over
    // the ring's 2 (N-1) steps), beta from the largest (what latency leaves of its time).
    std::vector<double> small;
    for (size_t i = 0; i < sizes.size(); ++i)
      if (sizes[i] <= 512) small.push_back(medians[i]);
    std::sort(small.begin(), small.end());
    const double steps = 2.0 * (N - 1);
    const double alpha = small[small.size() / 2] / steps;
    const double beta = std::max(medians.back() - steps * alpha, 0.0) * N / (steps * sizes.back());
    std::printf("fit: alpha %.2f us per message, beta %.4f ns per byte (%.2f GB/s per link)\n",
                1e6 * alpha, 1e9 * beta, 1.0 / beta / 1e9);
  }
}
