// The NCCL communicator on one GPU (frugal_cuda_tests; skipped with the rest where no CUDA
// device is present): over a group of one its collectives are the identity, and allreduce's
// prescale a scaling. Several GPUs need several ranks under mpirun and were never tried.
#include <doctest/doctest.h>

#include <memory>

#include "check/gradcheck.h"
#include "cuda/cuda_entry.h"
#include "dist/communicators.h"

using namespace frugal;
using namespace frugal::testing;

namespace {

Tensor on_gpu(const Tensor& host) {
  Tensor t = Tensor::empty(host.shape(), host.dtype(), Role::input, cuda_allocator());
  cuda_backend().copy_to_device(host, t);
  return t;
}

Tensor on_host(const Tensor& device) {
  Tensor h = Tensor::empty(device.shape(), device.dtype());
  cuda_backend().copy_to_host(device, h);
  return h;
}

}  // namespace

TEST_CASE("nccl communicator: a group of one, on device memory") {
  std::unique_ptr<Communicator> self = self_communicator();
  std::unique_ptr<Communicator> nccl = nccl_communicator(*self);
  CHECK(nccl->size() == 1);
  for (DType t : {DType::f32, DType::f64}) {
    const Tensor x = random_tensor({1001}, 5, -1, 1, t);
    Tensor gx = on_gpu(x);
    nccl->allreduce_sum(gx, 0.5).wait();
    const Tensor got = on_host(gx);
    for (int64_t i = 0; i < 1001; ++i)
      CHECK(element_as_double(got, i) == 0.5 * element_as_double(x, i));
    Tensor gy = on_gpu(x), part = on_gpu(Tensor::zeros({1001}, t));
    nccl->reduce_scatter_sum(gy, part, 1.0).wait();
    CHECK(bitwise_equal(on_host(part), x));
    Tensor all = on_gpu(Tensor::zeros({1001}, t));
    nccl->all_gather(on_gpu(x), all).wait();
    CHECK(bitwise_equal(on_host(all), x));
    Tensor gb = on_gpu(x);
    nccl->broadcast(gb, 0).wait();
    CHECK(bitwise_equal(on_host(gb), x));
  }
  nccl->barrier().wait();
  Tensor host = Tensor::zeros({4}, DType::f32);
  CHECK_THROWS_WITH(nccl->allreduce_sum(host), doctest::Contains("reads GPU memory"));
}
