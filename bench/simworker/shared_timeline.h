// One prefill queue shared by simulated workers in separate processes, as the replicas
// on one GPU share its compute: its state lives in a small file, read and advanced under
// an exclusive flock. Times are steady_clock (CLOCK_MONOTONIC), one clock for every
// process on the machine. Two ways to share:
// - kFifo: one queue; each prefill runs after every one queued before it, whoever's.
// - kSliced: each process's prefills run one after another, and the processes with
//   prefill pending share the GPU's speed equally (processor sharing), as CUDA
//   time-slices the contexts of separate processes: a replica with little queued gets
//   its first token soon even while another works through a long queue. A finish time
//   given assumes nothing more is queued meanwhile; `left_ms` tells, when it comes, how
//   much later work queued since has pushed it. The same file also counts the processes
//   decoding (set_decoding, decoders): the simulated decode steps of k processes
//   time-slicing the GPU take k times as long each.
#pragma once

#include <span>
#include <string>

namespace sy::sim {

// Processor sharing over `remaining` (each sharer's queued milliseconds at full speed):
// `elapsed_ms` later, with k sharers pending each has done elapsed / k of its own.
void share_elapsed(std::span<double> remaining, double elapsed_ms);
// When sharer `own`'s queue is done, from now, if nothing more is queued: each other
// sharer slows it by as much of its own work as fits before (sum of min(R_j, R_own)).
double sliced_finish_ms(std::span<const double> remaining, size_t own);

class SharedTimeline {
 public:
  enum class Sharing { kFifo, kSliced };
  // Opens (creating) the file at `path`; throws std::runtime_error when it cannot.
  explicit SharedTimeline(const std::string& path, Sharing sharing = Sharing::kFifo);
  ~SharedTimeline();
  SharedTimeline(const SharedTimeline&) = delete;
  SharedTimeline& operator=(const SharedTimeline&) = delete;

  // Work queued: when it should be done, and what `left_ms` needs to tell if it is.
  struct Queued {
    double done_in_ms = 0;  // from when it was queued, if nothing more is queued meanwhile
    size_t slot = 0;        // kSliced: the sharer's slot in the file
    double target_ms = 0;   // kSliced: the work that slot must have served to be done
  };
  // Queues `ms` of work (at the GPU's full speed).
  Queued queue(double ms);
  // Milliseconds from now until `q` is done: 0 when it is (always, for kFifo, once
  // done_in_ms has passed); else the estimate as of now.
  double left_ms(const Queued& q);

  // kSliced: this process has `n` requests decoding (0: none).
  void set_decoding(int32_t n);
  // kSliced: the processes with a request decoding now (exited ones not counted).
  int32_t decoders();

  // Sharers a kSliced file tracks at once (processes with prefill pending).
  static constexpr size_t kMaxSharers = 64;

 private:
  struct SlicedFile;
  template <typename F>
  auto locked(F&& f);
  void read_advanced(SlicedFile& f, int64_t now_ns);
  void write(const SlicedFile& f);
  Queued queue_fifo(double ms, int64_t now_ns);
  Queued queue_sliced(double ms, int64_t now_ns);

  int fd_ = -1;
  Sharing sharing_;
};

}  // namespace sy::sim
