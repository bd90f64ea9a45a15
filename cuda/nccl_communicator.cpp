// The NCCL communicator: collectives between the GPUs of several ranks, one GPU per rank (the
// current CUDA device), on a stream of its own. A bootstrap communicator (MPI) carries NCCL's
// unique id from rank 0. Each collective waits for the work already queued on the default
// stream, then runs on the communicator's stream; its handle waits on an event recorded after
// it. Uneven chunks (chunk_of) go through grouped reduce and broadcast calls. NCCL sums in
// an order fixed by its algorithm and the topology: the same bits from run to run on the same
// machines and NCCL version, but not necessarily the same bits for reduce-scatter as for
// allreduce (the MPI communicator guarantees both). A rank that dies is noticed by the
// bootstrap communicator's heartbeats, which end the job.
#include <cuda_runtime.h>
#include <nccl.h>

#include <cstring>

#include "core/communicator.h"
#include "core/error.h"
#include "cuda/cuda_entry.h"

namespace frugal {

namespace {

void check_cuda(cudaError_t e, const char* what) {
  FRUGAL_CHECK(e == cudaSuccess, "nccl communicator: ", what, ": ", cudaGetErrorString(e));
}

void check_nccl(ncclResult_t r, const char* what) {
  FRUGAL_CHECK(r == ncclSuccess, "nccl communicator: ", what, ": ", ncclGetErrorString(r));
}

class NcclWork : public CommWork {
 public:
  explicit NcclWork(cudaStream_t stream) {
    check_cuda(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming), "cudaEventCreate");
    check_cuda(cudaEventRecord(event_, stream), "cudaEventRecord");
  }
  ~NcclWork() override { cudaEventDestroy(event_); }
  void wait() override { check_cuda(cudaEventSynchronize(event_), "a collective"); }
  bool done() override { return cudaEventQuery(event_) == cudaSuccess; }

 private:
  cudaEvent_t event_ = nullptr;
};

ncclDataType_t nccl_type(const Tensor& t, const char* what) {
  FRUGAL_CHECK(t.dtype() == DType::f32 || t.dtype() == DType::f64, what, ": sums f32 or f64, got ",
               dtype_name(t.dtype()), " ", t.shape());
  return t.dtype() == DType::f32 ? ncclFloat32 : ncclFloat64;
}

void check_device_memory(const Tensor& t, const char* what) {
  FRUGAL_CHECK(t.device().kind == DeviceKind::cuda, what, ": the NCCL communicator reads GPU ",
               "memory; this tensor lives on ", t.device().str());
}

class NcclCommunicator : public Communicator {
 public:
  explicit NcclCommunicator(Communicator& bootstrap)
      : rank_(bootstrap.rank()), size_(bootstrap.size()) {
    ncclUniqueId id;
    if (rank_ == 0) check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
    Tensor carrier = Tensor::empty({static_cast<int64_t>(sizeof id)}, DType::u8);
    std::memcpy(carrier.raw(), &id, sizeof id);
    bootstrap.broadcast(carrier, 0).wait();
    std::memcpy(&id, carrier.raw(), sizeof id);
    check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
    check_cuda(cudaEventCreateWithFlags(&queued_, cudaEventDisableTiming), "cudaEventCreate");
    check_nccl(ncclCommInitRank(&comm_, size_, id, rank_), "ncclCommInitRank");
    check_cuda(cudaMalloc(&one_, sizeof(float)), "cudaMalloc");
  }
  ~NcclCommunicator() override {
    cudaStreamSynchronize(stream_);
    ncclCommDestroy(comm_);
    cudaFree(one_);
    cudaEventDestroy(queued_);
    cudaStreamDestroy(stream_);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string name() const override { return "nccl"; }

  CommHandle allreduce_sum(Tensor& x, double prescale) override {
    const ncclDataType_t t = nccl_type(x, "allreduce");
    check_device_memory(x, "allreduce");
    start();
    Op op(comm_, t, prescale);
    check_nccl(ncclAllReduce(x.device_raw(), x.device_raw(), static_cast<size_t>(x.numel()), t,
                             op.op, comm_, stream_),
               "ncclAllReduce");
    return finish();
  }

  CommHandle reduce_scatter_sum(Tensor& x, Tensor& y, double prescale) override {
    const ncclDataType_t t = nccl_type(x, "reduce_scatter");
    check_device_memory(x, "reduce_scatter");
    check_device_memory(y, "reduce_scatter");
    const ChunkRange mine = chunk_of(x.numel(), size_, rank_);
    FRUGAL_CHECK(y.dtype() == x.dtype() && y.numel() == mine.size(), "reduce_scatter: the result ",
                 "holds ", y.numel(), ", expected ", mine.size());
    start();
    Op op(comm_, t, prescale);
    check_nccl(ncclGroupStart(), "ncclGroupStart");
    for (int r = 0; r < size_; ++r) {
      const ChunkRange c = chunk_of(x.numel(), size_, r);
      void* part = x.elements(c.begin, c.size()).device_raw();
      check_nccl(ncclReduce(part, r == rank_ ? y.device_raw() : part, static_cast<size_t>(c.size()),
                            t, op.op, r, comm_, stream_),
                 "ncclReduce");
    }
    check_nccl(ncclGroupEnd(), "ncclGroupEnd");
    return finish();
  }

  CommHandle all_gather(const Tensor& x, Tensor& y) override {
    check_device_memory(x, "all_gather");
    check_device_memory(y, "all_gather");
    const ChunkRange mine = chunk_of(y.numel(), size_, rank_);
    FRUGAL_CHECK(x.dtype() == y.dtype() && x.numel() == mine.size(), "all_gather: this rank's ",
                 "part holds ", x.numel(), ", expected ", mine.size());
    start();
    check_nccl(ncclGroupStart(), "ncclGroupStart");
    for (int r = 0; r < size_; ++r) {
      const ChunkRange c = chunk_of(y.numel(), size_, r);
      const size_t bytes = static_cast<size_t>(c.size()) * dtype_size(y.dtype());
      void* part = y.elements(c.begin, c.size()).device_raw();
      check_nccl(ncclBroadcast(r == rank_ ? x.device_raw() : part, part, bytes, ncclUint8, r, comm_,
                               stream_),
                 "ncclBroadcast");
    }
    check_nccl(ncclGroupEnd(), "ncclGroupEnd");
    return finish();
  }

  CommHandle broadcast(Tensor& x, int root) override {
    check_device_memory(x, "broadcast");
    FRUGAL_CHECK(root >= 0 && root < size_, "broadcast: root rank ", root, " is not in 0..",
                 size_ - 1);
    start();
    check_nccl(
        ncclBroadcast(x.device_raw(), x.device_raw(), x.bytes(), ncclUint8, root, comm_, stream_),
        "ncclBroadcast");
    return finish();
  }

  CommHandle barrier() override {
    start();
    check_nccl(ncclAllReduce(one_, one_, 1, ncclFloat32, ncclSum, comm_, stream_), "ncclAllReduce");
    return finish();
  }

 private:
  // The sum with each rank's contribution scaled first (NCCL's pre-multiplied sum).
  struct Op {
    Op(ncclComm_t comm, ncclDataType_t t, double prescale) : comm_(comm) {
      if (prescale == 1.0) return;
      float f = static_cast<float>(prescale);
      check_nccl(ncclRedOpCreatePreMulSum(
                     &op, t == ncclFloat32 ? static_cast<void*>(&f) : static_cast<void*>(&prescale),
                     t, ncclScalarHostImmediate, comm),
                 "ncclRedOpCreatePreMulSum");
      custom_ = true;
    }
    ~Op() {
      if (custom_) ncclRedOpDestroy(op, comm_);
    }
    ncclRedOp_t op = ncclSum;
    ncclComm_t comm_;
    bool custom_ = false;
  };

  // After what the default stream has queued (the gradients' backward kernels).
  void start() {
    check_cuda(cudaEventRecord(queued_, cudaStreamLegacy), "cudaEventRecord");
    check_cuda(cudaStreamWaitEvent(stream_, queued_, 0), "cudaStreamWaitEvent");
  }
  CommHandle finish() { return CommHandle(std::make_shared<NcclWork>(stream_)); }

  int rank_, size_;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t queued_ = nullptr;
  void* one_ = nullptr;  // barrier's element
};

}  // namespace

std::unique_ptr<Communicator> nccl_communicator(Communicator& bootstrap) {
  FRUGAL_CHECK(cuda_available(), "nccl communicator: no CUDA device");
  cuda_backend();  // the device's context first
  return std::make_unique<NcclCommunicator>(bootstrap);
}

void cuda_select_device(int local_rank) {
  int count = 0;
  check_cuda(cudaGetDeviceCount(&count), "cudaGetDeviceCount");
  FRUGAL_CHECK(count > 0, "cuda: no CUDA device for local rank ", local_rank);
  check_cuda(cudaSetDevice(local_rank % count), "cudaSetDevice");
}

}  // namespace frugal
