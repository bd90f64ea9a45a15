// The decode pipeline: a queue of batches, each split into samples that any worker takes.
#include "data/pipeline.h"

#include <algorithm>
#include <chrono>

#include "core/allocator.h"
#include "core/error.h"

namespace frugal {

struct DecodePipeline::Job {
  int epoch = 0;
  int64_t first = 0, batch = 0;
  std::vector<int64_t> indices;  // the samples, in batch order
  Tensor buffer;                 // (B,3,S,S) f32
  std::vector<int32_t> labels;
  int64_t next = 0, done = 0;  // samples handed out, finished
  int64_t error_at = -1;       // the first sample that failed, and why
  std::exception_ptr error;
};

DecodePipeline::DecodePipeline(const ImageSource& source, uint64_t seed, int workers, int depth)
    : source_(source), seed_(seed), depth_(std::max(depth, 0)) {
  if (workers <= 0) workers = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  FRUGAL_CHECK(workers <= 1024, "data: ", workers, " decode workers, expected 1..1024");
  for (int w = 0; w < workers; ++w) threads_.emplace_back([this] { work(); });
}

DecodePipeline::~DecodePipeline() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  work_ready_.notify_all();
  for (std::thread& t : threads_) t.join();
}

int64_t DecodePipeline::skipped() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return skipped_;
}

size_t DecodePipeline::buffer_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  size_t bytes = 0;
  for (const Tensor& t : free_) bytes += t.bytes();
  for (const auto& j : jobs_) bytes += j->buffer.bytes();
  return bytes;
}

// Called with mutex_ held.
std::shared_ptr<DecodePipeline::Job> DecodePipeline::queue(int epoch,
                                                           const std::vector<int64_t>& order,
                                                           int64_t first, int64_t B) {
  auto job = std::make_shared<Job>();
  job->epoch = epoch;
  job->first = first;
  job->batch = B;
  job->indices.assign(order.begin() + first, order.begin() + first + B);
  job->labels.assign(static_cast<size_t>(B), 0);
  const int64_t S = source_.transform.size;
  const Shape shape{B, 3, S, S};
  for (size_t i = 0; i < free_.size(); ++i)
    if (free_[i].shape() == shape) {
      job->buffer = free_[i];
      free_.erase(free_.begin() + static_cast<std::ptrdiff_t>(i));
      break;
    }
  if (!job->buffer.defined()) job->buffer = Tensor::empty(shape, DType::f32, Role::data);
  jobs_.push_back(job);
  return job;
}

void DecodePipeline::fill(int epoch, const std::vector<int64_t>& order, int64_t first, int64_t B,
                          float* out, int32_t* labels) {
  FRUGAL_CHECK(first >= 0 && B > 0 && first + B <= static_cast<int64_t>(order.size()),
               "data: batch [", first, ", ", first + B, ") outside the epoch of ", order.size());
  std::unique_lock<std::mutex> lock(mutex_);
  // The batch asked for is the first queued one, or the queue was for another order: restart.
  const auto matches = [&](const Job& j) {
    return j.epoch == epoch && j.first == first && j.batch == B &&
           std::equal(j.indices.begin(), j.indices.end(), order.begin() + first);
  };
  while (!jobs_.empty() && !matches(*jobs_.front())) {
    jobs_.front()->next = jobs_.front()->batch;  // hand out no more of it
    jobs_.pop_front();
  }
  std::shared_ptr<Job> job = jobs_.empty() ? queue(epoch, order, first, B) : jobs_.front();
  for (int k = 1; k <= depth_; ++k) {
    const int64_t next = first + k * B;
    if (next + B > static_cast<int64_t>(order.size())) break;
    bool queued = false;
    for (const auto& j : jobs_) queued |= j->epoch == epoch && j->first == next && j->batch == B;
    if (!queued) queue(epoch, order, next, B);
  }
  work_ready_.notify_all();
  const auto start = std::chrono::steady_clock::now();
  sample_done_.wait(lock, [&] { return job->done == job->batch; });
  waited_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  jobs_.pop_front();
  free_.push_back(job->buffer);
  if (job->error) std::rethrow_exception(job->error);
  const float* src = job->buffer.data<float>();
  std::copy(src, src + job->buffer.numel(), out);
  std::copy(job->labels.begin(), job->labels.end(), labels);
}

void DecodePipeline::work() {
  std::unique_lock<std::mutex> lock(mutex_);
  const int64_t sample = 3 * source_.transform.size * source_.transform.size;
  while (true) {
    std::shared_ptr<Job> job;
    work_ready_.wait(lock, [&] {
      if (stop_) return true;
      for (const auto& j : jobs_)
        if (j->next < j->batch) return true;
      return false;
    });
    if (stop_) return;
    for (const auto& j : jobs_)
      if (j->next < j->batch) {
        job = j;
        break;
      }
    const int64_t i = job->next++;
    const int64_t index = job->indices[static_cast<size_t>(i)];
    float* out = job->buffer.data<float>() + i * sample;
    lock.unlock();
    int64_t skipped = 0;
    int32_t label = 0;
    std::exception_ptr error;
    try {
      label = load_sample(source_, index, seed_, job->epoch, out, &skipped);
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    job->labels[static_cast<size_t>(i)] = label;
    skipped_ += skipped;
    if (error && (job->error_at < 0 || i < job->error_at)) {
      job->error_at = i;
      job->error = error;
    }
    ++job->done;
    sample_done_.notify_all();
  }
}

}  // namespace frugal
