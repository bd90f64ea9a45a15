// The MPI communicator. One thread of its own initialises MPI and alone calls it
// (MPI_THREAD_FUNNELED): callers queue collectives and wait on handles while that thread runs
// them in order with point-to-point messages, sums on the host in an order fixed by the group
// (rings for allreduce, reduce-scatter and all-gather; direct broadcast and barrier) and, busy or
// idle, sends every peer a heartbeat five times a second. A peer silent for longer than the
// timeout fails every pending and later collective with an error naming it; destroying a
// communicator that failed, or during an exception, aborts the job (mpirun then stops every
// rank), so no rank waits forever on a dead or stopped one. Over 400 lines on purpose: one
// class, whose thread alone owns MPI, the queue, the heartbeats and the collectives' state.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "core/error.h"
#include "dist/communicators.h"
#include "dist/reduce.h"

namespace frugal {

namespace {

using Clock = std::chrono::steady_clock;

class MpiWork : public CommWork {
 public:
  void wait() override {
    std::unique_lock<std::mutex> lock(m_);
    cv_.wait(lock, [&] { return done_; });
    if (!error_.empty()) throw Error(error_);
  }
  bool done() override {
    std::lock_guard<std::mutex> lock(m_);
    return done_;
  }
  void finish(const std::string& error) {
    {
      std::lock_guard<std::mutex> lock(m_);
      done_ = true;
      error_ = error;
    }
    cv_.notify_all();
  }

 private:
  std::mutex m_;
  std::condition_variable cv_;
  bool done_ = false;
  std::string error_;
};

enum class Kind { allreduce, reduce_scatter, all_gather, broadcast, barrier, shutdown };

struct Job {
  Kind kind = Kind::barrier;
  std::string what;  // "allreduce of 1024 f32", for errors
  Tensor x, y;
  double prescale = 1.0;
  int root = 0;
  std::shared_ptr<MpiWork> work;
};

Job job_of(Kind kind, Tensor x = {}, Tensor y = {}, double prescale = 1.0, int root = 0) {
  Job j;
  j.kind = kind;
  j.x = std::move(x);
  j.y = std::move(y);
  j.prescale = prescale;
  j.root = root;
  return j;
}

struct Failed {
  std::string why;
};

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::allreduce:
      return "allreduce";
    case Kind::reduce_scatter:
      return "reduce_scatter";
    case Kind::all_gather:
      return "all_gather";
    case Kind::broadcast:
      return "broadcast";
    case Kind::barrier:
      return "barrier";
    case Kind::shutdown:
      return "shutdown barrier";
  }
  return "?";
}

int byte_count(size_t bytes, const std::string& what) {
  FRUGAL_CHECK(bytes <= static_cast<size_t>(INT_MAX), what, ": ", bytes,
               " bytes in one message; the MPI communicator sends at most ", INT_MAX);
  return static_cast<int>(bytes);
}

class MpiCommunicator : public Communicator {
 public:
  explicit MpiCommunicator(const MpiOptions& options) : options_(options) {
    FRUGAL_CHECK(options.timeout_seconds > 0, "mpi: the timeout (", options.timeout_seconds,
                 " s) must be above 0");
    thread_ = std::thread([this] { run(); });
    std::unique_lock<std::mutex> lock(m_);
    cv_.wait(lock, [&] { return started_; });
    if (!start_error_.empty()) {
      lock.unlock();
      thread_.join();
      throw Error(start_error_);
    }
  }

  ~MpiCommunicator() override {
    {
      std::lock_guard<std::mutex> lock(m_);
      abort_ = abort_ || std::uncaught_exceptions() > 0;
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string name() const override { return "mpi"; }

  CommHandle allreduce_sum(Tensor& x, double prescale) override {
    check_reducible(x, "allreduce");
    return submit(job_of(Kind::allreduce, x, {}, prescale));
  }
  CommHandle reduce_scatter_sum(Tensor& x, Tensor& y, double prescale) override {
    check_reducible(x, "reduce_scatter");
    check_same_kind(x, y, chunk_of(x.numel(), size_, rank_).size(), "reduce_scatter");
    return submit(job_of(Kind::reduce_scatter, x, y, prescale));
  }
  CommHandle all_gather(const Tensor& x, Tensor& y) override {
    check_same_kind(y, x, chunk_of(y.numel(), size_, rank_).size(), "all_gather");
    return submit(job_of(Kind::all_gather, x, y));
  }
  CommHandle broadcast(Tensor& x, int root) override {
    FRUGAL_CHECK(root >= 0 && root < size_, "broadcast: root rank ", root, " is not in 0..",
                 size_ - 1);
    (void)x.raw();
    return submit(job_of(Kind::broadcast, x, {}, 1.0, root));
  }
  CommHandle barrier() override { return submit(job_of(Kind::barrier)); }

 private:
  CommHandle submit(Job j) {
    if (j.x.defined())
      j.what = detail::concat(kind_name(j.kind), " of ", j.x.numel(), " ", dtype_name(j.x.dtype()));
    else
      j.what = kind_name(j.kind);
    auto work = std::make_shared<MpiWork>();
    j.work = work;
    {
      std::lock_guard<std::mutex> lock(m_);
      if (!failure_.empty()) throw Error(failure_);
      queue_.push_back(std::move(j));
    }
    cv_.notify_all();
    return CommHandle(work);
  }

  // --- the communication thread ---

  void run() {
    int provided = 0;
    std::string error;
    if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
      error = "mpi: MPI_Init_thread failed";
    if (error.empty()) {
      MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
      MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
      MPI_Comm_size(MPI_COMM_WORLD, &size_);
      MPI_Comm_dup(MPI_COMM_WORLD, &data_);
      MPI_Comm_dup(MPI_COMM_WORLD, &beat_);
      heard_.assign(static_cast<size_t>(size_), Clock::now());
      beat_in_.assign(static_cast<size_t>(size_), 0);
      beat_recv_.assign(static_cast<size_t>(size_), MPI_REQUEST_NULL);
      beat_send_.assign(static_cast<size_t>(size_), MPI_REQUEST_NULL);
      for (int p = 0; p < size_; ++p)
        if (p != rank_) post_beat_receive(p);
    }
    {
      std::lock_guard<std::mutex> lock(m_);
      start_error_ = error;
      started_ = true;
    }
    cv_.notify_all();
    if (!error.empty()) return;

    bool shut = false;
    while (!shut) {
      Job job;
      bool have = false;
      {
        std::unique_lock<std::mutex> lock(m_);
        cv_.wait_for(lock, std::chrono::milliseconds(20), [&] { return stop_ || !queue_.empty(); });
        if (!queue_.empty()) {
          job = std::move(queue_.front());
          queue_.pop_front();
          have = true;
        } else if (stop_) {
          if (abort_ || !failure_.empty()) break;
          job = job_of(Kind::shutdown);
          job.what = "shutdown barrier";
          have = shut = true;
        }
      }
      try {
        beat();
        if (!have) continue;
        ++seq_;
        execute(job);
        finish(job, "");
      } catch (const Failed& f) {
        fail(f.why, job);
        break;
      } catch (const std::exception& e) {
        finish(job, e.what());
        if (shut) break;
      }
    }
    bool abort_now = false;
    {
      std::lock_guard<std::mutex> lock(m_);
      abort_now = abort_ || !failure_.empty();
    }
    if (abort_now) {
      std::fflush(stdout);
      std::fflush(stderr);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (int p = 0; p < size_; ++p) {
      if (beat_recv_[static_cast<size_t>(p)] != MPI_REQUEST_NULL) {
        MPI_Cancel(&beat_recv_[static_cast<size_t>(p)]);
        MPI_Wait(&beat_recv_[static_cast<size_t>(p)], MPI_STATUS_IGNORE);
      }
      if (beat_send_[static_cast<size_t>(p)] != MPI_REQUEST_NULL)
        MPI_Wait(&beat_send_[static_cast<size_t>(p)], MPI_STATUS_IGNORE);
    }
    MPI_Comm_free(&beat_);
    MPI_Comm_free(&data_);
    MPI_Finalize();
  }

  // Drops the job's tensors, then tells its caller: the caller's references outlive this
  // thread's, so memory is never released here (allocators are not shared across threads).
  static void finish(Job& job, const std::string& error) {
    std::shared_ptr<MpiWork> work = std::move(job.work);
    job = Job{};
    if (work) work->finish(error);
  }

  // Fails this job, every queued one and every later submission with `why`, said once on
  // stderr as well (the job is aborted when the communicator is destroyed).
  void fail(const std::string& why, Job& job) {
    std::fprintf(stderr, "frugal rank %d: %s\n", rank_, why.c_str());
    std::deque<Job> queued;
    {
      std::lock_guard<std::mutex> lock(m_);
      failure_ = why;
      queued.swap(queue_);
    }
    finish(job, why);
    for (Job& j : queued) finish(j, why);
  }

  void post_beat_receive(int p) {
    MPI_Irecv(&beat_in_[static_cast<size_t>(p)], 1, MPI_BYTE, p, 7, beat_,
              &beat_recv_[static_cast<size_t>(p)]);
  }

  // Heartbeats in and out; throws Failed naming a peer silent for longer than the timeout.
  void beat() {
    const auto now = Clock::now();
    for (int p = 0; p < size_; ++p) {
      if (p == rank_) continue;
      const size_t i = static_cast<size_t>(p);
      int flag = 0;
      MPI_Test(&beat_recv_[i], &flag, MPI_STATUS_IGNORE);
      if (flag) {
        heard_[i] = now;
        post_beat_receive(p);
      }
    }
    if (now - last_beat_ >= std::chrono::milliseconds(200)) {
      last_beat_ = now;
      for (int p = 0; p < size_; ++p) {
        if (p == rank_) continue;
        const size_t i = static_cast<size_t>(p);
        int flag = 1;
        if (beat_send_[i] != MPI_REQUEST_NULL) MPI_Test(&beat_send_[i], &flag, MPI_STATUS_IGNORE);
        if (flag) MPI_Isend(&beat_out_, 1, MPI_BYTE, p, 7, beat_, &beat_send_[i]);
      }
    }
    for (int p = 0; p < size_; ++p) {
      const double silent =
          std::chrono::duration<double>(now - heard_[static_cast<size_t>(p)]).count();
      if (p != rank_ && silent > options_.timeout_seconds)
        throw Failed{detail::concat("rank ", p, " has not been heard from for ", silent,
                                    " s (it died or stopped answering; the timeout is ",
                                    options_.timeout_seconds, " s); rank ", rank_, " was in ",
                                    current_)};
    }
  }

  // Waits for the requests, keeping the heartbeats going; throws Failed as beat() does.
  void complete(std::vector<MPI_Request>& reqs) {
    for (int spins = 0;; ++spins) {
      int flag = 0;
      MPI_Testall(static_cast<int>(reqs.size()), reqs.data(), &flag, MPI_STATUSES_IGNORE);
      if (flag) break;
      beat();
      if (spins < 64)
        std::this_thread::yield();
      else
        std::this_thread::sleep_for(std::chrono::microseconds(spins < 4096 ? 10 : 50));
    }
    reqs.clear();
  }

  int tag() const { return 100 + static_cast<int>(seq_ % 30000); }

  void send(const void* p, size_t bytes, int to, std::vector<MPI_Request>& reqs) {
    reqs.emplace_back();
    MPI_Isend(p, byte_count(bytes, current_), MPI_BYTE, to, tag(), data_, &reqs.back());
  }
  void receive(void* p, size_t bytes, int from, std::vector<MPI_Request>& reqs) {
    reqs.emplace_back();
    MPI_Irecv(p, byte_count(bytes, current_), MPI_BYTE, from, tag(), data_, &reqs.back());
  }

  // Ring reduce-scatter in place: afterwards x's chunk r (chunk_of) holds the sum over ranks
  // of chunk r, summed from rank r + 1 around the ring to rank r: a fixed order.
  void ring_reduce_scatter(Tensor& x) {
    const int N = size_, r = rank_;
    if (N == 1) return;
    char* p = static_cast<char*>(x.raw());
    const DType t = x.dtype();
    const size_t es = dtype_size(t);
    const int64_t n = x.numel();
    const int next = (r + 1) % N, prev = (r + N - 1) % N;
    scratch_.resize(static_cast<size_t>(chunk_of(n, N, N - 1).size() + 1) * es);
    std::vector<MPI_Request> reqs;
    for (int s = 0; s + 1 < N; ++s) {
      const int out = ((r - s - 1) % N + N) % N, in = ((r - s - 2) % N + N) % N;
      const ChunkRange co = chunk_of(n, N, out), ci = chunk_of(n, N, in);
      receive(scratch_.data(), static_cast<size_t>(ci.size()) * es, prev, reqs);
      send(p + static_cast<size_t>(co.begin) * es, static_cast<size_t>(co.size()) * es, next, reqs);
      complete(reqs);
      add_elements(p + static_cast<size_t>(ci.begin) * es, scratch_.data(), t, ci.size());
    }
  }

  // Ring all-gather in place: x's chunk r is this rank's; afterwards every chunk is its rank's.
  void ring_all_gather(Tensor& x) {
    const int N = size_, r = rank_;
    if (N == 1) return;
    char* p = static_cast<char*>(x.raw());
    const size_t es = dtype_size(x.dtype());
    const int64_t n = x.numel();
    const int next = (r + 1) % N, prev = (r + N - 1) % N;
    std::vector<MPI_Request> reqs;
    for (int s = 0; s + 1 < N; ++s) {
      const int out = ((r - s) % N + N) % N, in = ((r - s - 1) % N + N) % N;
      const ChunkRange co = chunk_of(n, N, out), ci = chunk_of(n, N, in);
      receive(p + static_cast<size_t>(ci.begin) * es, static_cast<size_t>(ci.size()) * es, prev,
              reqs);
      send(p + static_cast<size_t>(co.begin) * es, static_cast<size_t>(co.size()) * es, next, reqs);
      complete(reqs);
    }
  }

  void execute(Job& j) {
    current_ = j.what;
    std::vector<MPI_Request> reqs;
    const int N = size_, r = rank_;
    switch (j.kind) {
      case Kind::allreduce:
        scale_elements(j.x.raw(), j.x.dtype(), j.x.numel(), j.prescale);
        ring_reduce_scatter(j.x);
        ring_all_gather(j.x);
        break;
      case Kind::reduce_scatter: {
        scale_elements(j.x.raw(), j.x.dtype(), j.x.numel(), j.prescale);
        ring_reduce_scatter(j.x);
        const ChunkRange mine = chunk_of(j.x.numel(), N, r);
        const size_t es = dtype_size(j.x.dtype());
        std::memmove(j.y.raw(),
                     static_cast<char*>(j.x.raw()) + static_cast<size_t>(mine.begin) * es,
                     static_cast<size_t>(mine.size()) * es);
        break;
      }
      case Kind::all_gather: {
        const ChunkRange mine = chunk_of(j.y.numel(), N, r);
        const size_t es = dtype_size(j.y.dtype());
        std::memmove(static_cast<char*>(j.y.raw()) + static_cast<size_t>(mine.begin) * es,
                     j.x.raw(), j.x.bytes());
        ring_all_gather(j.y);
        break;
      }
      case Kind::broadcast:
        if (r == j.root) {
          for (int q = 0; q < N; ++q)
            if (q != r) send(j.x.raw(), j.x.bytes(), q, reqs);
        } else {
          receive(j.x.raw(), j.x.bytes(), j.root, reqs);
        }
        complete(reqs);
        break;
      case Kind::barrier:
      case Kind::shutdown:
        for (int q = 0; q < N; ++q) {
          if (q == r) continue;
          receive(nullptr, 0, q, reqs);
          send(nullptr, 0, q, reqs);
        }
        complete(reqs);
        break;
    }
  }

  MpiOptions options_;
  std::thread thread_;
  std::mutex m_;
  std::condition_variable cv_;
  bool started_ = false, stop_ = false, abort_ = false;
  std::string start_error_, failure_;
  std::deque<Job> queue_;

  // The communication thread's own.
  int rank_ = 0, size_ = 1;
  MPI_Comm data_ = MPI_COMM_NULL, beat_ = MPI_COMM_NULL;
  std::vector<Clock::time_point> heard_;
  std::vector<char> beat_in_;
  char beat_out_ = 1;
  std::vector<MPI_Request> beat_recv_, beat_send_;
  Clock::time_point last_beat_{};
  uint64_t seq_ = 0;
  std::string current_ = "no collective";
  std::vector<char> scratch_;
};

}  // namespace

bool mpi_built() {
  return true;
}

std::unique_ptr<Communicator> mpi_communicator(const MpiOptions& options) {
  static std::mutex once;
  static bool made = false;
  std::lock_guard<std::mutex> lock(once);
  FRUGAL_CHECK(!made, "mpi: one MPI communicator per process (MPI is initialised once)");
  made = true;
  return std::make_unique<MpiCommunicator>(options);
}

}  // namespace frugal
