// CudaBackend::profile_step: where a step's time goes. Each decoder op's device time
// comes from events recorded after it (ObservedOps, worker/model/observed_ops.h) in an
// eager step that the host queues whole behind a delay kernel, so the kernels run back
// to back as in a graph and no host launch gap lands in an op's time; then the graph
// replay, forward() and forward_sample() are timed whole.
#include <algorithm>
#include <chrono>
#include <map>
#include <stdexcept>

#include "common/check.h"
#include "kernels/cuda/delay.cuh"
#include "kernels/cuda/embedding.cuh"
#include "kernels/cuda/launch.cuh"
#include "worker/backend/cuda_backend.h"

namespace sy {
namespace {

// Long enough for the host to queue an eager step (hundreds of launches) behind it.
constexpr uint64_t kHoldNs = 50'000'000;

double weight_bytes(const cuda::LinearWeight& w) {
  double quant = 0;
  for (int i = 0; i < w.quant_parts; ++i)
    quant += static_cast<double>(cuda::quant_device_bytes(w.quant[i].type, w.quant[i].n, w.quant[i].k));
  if (w.is_quant()) return quant;
  const double elements = static_cast<double>(w.n) * static_cast<double>(w.k);
  return w.is_q8_0() ? elements * (1.0 + 2.0 / cuda::kQ8_0Block) : elements * 2.0;
}

double now_ms() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Events recorded on a stream, each with the name of what ran before it; reused across
// repeats.
class EventTrail {
 public:
  ~EventTrail() {
    for (cudaEvent_t e : events_) cudaEventDestroy(e);
  }
  void restart() { used_ = 0; }
  cudaError_t record(const char* name, cudaStream_t stream) {
    if (used_ == events_.size()) {
      cudaEvent_t e = nullptr;
      if (const cudaError_t err = cudaEventCreate(&e); err != cudaSuccess) return err;
      events_.push_back(e);
      names_.push_back(nullptr);
    }
    names_[used_] = name;
    return cudaEventRecord(events_[used_++], stream);
  }
  size_t size() const { return used_; }
  cudaEvent_t event(size_t i) const { return events_[i]; }
  const char* name(size_t i) const { return names_[i]; }

 private:
  std::vector<cudaEvent_t> events_;
  std::vector<const char*> names_;
  size_t used_ = 0;
};

}  // namespace

StepProfile CudaBackend::profile_step(const BatchPlan& plan, int repeats) {
  if (cp_) throw std::logic_error("profile_step: not built for a context-parallel rank");
  const cuda::ProgrammaticLaunch pdl(programmatic_launch_);
  StepProfile out;
  const std::string bad = plan.validate(block_size_, num_blocks_, config_.vocab);
  SY_CHECK_MSG(bad.empty(), "invalid batch plan: %s", bad.c_str());
  const Step step = analyze(plan, block_size_);
  const auto R = static_cast<int64_t>(plan.logits_rows.size());
  if (step.tokens == 0 || R == 0 || repeats < 1 || config_.n_layers == 0) return out;
  const ModelConfig& c = local_;  // this rank's heads
  const int64_t V = c.vocab;

  // What each op reads once per call.
  std::map<std::string, double> bytes_per_call;
  const CudaLayerWeights& L = weights_.layers[0];
  bytes_per_call["QKV projection"] = weight_bytes(L.wqkv);
  bytes_per_call["output projection"] = weight_bytes(L.wo);
  bytes_per_call["gate/up projection"] = weight_bytes(L.w_gate_up);
  bytes_per_call["down projection"] = weight_bytes(L.w_down);
  bytes_per_call["LM head"] = weight_bytes(weights_.lm_head);
  double kv_bytes = 0;
  const PagedKvTable table = plan.kv_table(block_size_);
  for (int32_t i = 0; i < step.seqs; ++i)
    kv_bytes += static_cast<double>(table.context_len(i)) * c.kv_dim() * 2 * sizeof(__nv_bfloat16);
  bytes_per_call["attention"] = kv_bytes;

  // 1. Each op, eager, queued whole behind the delay kernel.
  const int64_t head_rows = step.decode ? step.tokens : std::min<int64_t>(R, logits_capacity_);
  ensure_choice_capacity(head_rows, 0);
  std::vector<std::string> order;
  std::map<std::string, std::vector<double>> op_ms;
  std::map<std::string, int32_t> op_calls;
  int held = 0;
  EventTrail trail;
  const std::function<void(const char*)> mark = [&](const char* name) { check(trail.record(name, stream_), "recording a profile event"); };
  for (int rep = 0; rep < repeats; ++rep) {
    prepare_step(plan, step);
    check(cuda::delay(kHoldNs, stream_), "holding the stream");
    trail.restart();
    mark("start");
    enqueue_layers(step, &mark);
    const __nv_bfloat16* head_in = h_.as<__nv_bfloat16>();
    if (!step.decode) {
      cuda::GatherRowsArgs g;
      g.table = h_.as<__nv_bfloat16>();
      g.table_rows = step.tokens;
      g.cols = c.hidden;
      g.ids = plan_.as<int32_t>() + plan_layout().logits_rows;
      g.rows = head_rows;
      g.out_bf16 = rows_h_.as<__nv_bfloat16>();
      check(cuda::gather_rows(g, stream_), "gathering logits rows");
      head_in = rows_h_.as<__nv_bfloat16>();
      mark("logits rows");
    }
    enqueue_lm_head(head_in, head_rows);
    mark("LM head");
    enqueue_choose(0, head_rows, false);
    mark("argmax");
    // Still waiting on the delay kernel once everything is queued: no op waited for
    // the host.
    if (cudaEventQuery(trail.event(0)) == cudaErrorNotReady) ++held;
    cudaGetLastError();  // the query's "not ready" is no launch error
    check(cudaStreamSynchronize(stream_), "profiling the step");
    std::map<std::string, double> sum;
    std::map<std::string, int32_t> calls;
    for (size_t i = 1; i < trail.size(); ++i) {
      float ms = 0;
      check(cudaEventElapsedTime(&ms, trail.event(i - 1), trail.event(i)), "reading a profile event");
      const std::string name = trail.name(i);
      if (!op_ms.count(name) && !sum.count(name)) order.push_back(name);
      sum[name] += ms;
      ++calls[name];
    }
    for (const auto& [name, ms] : sum) {
      op_ms[name].push_back(ms);
      op_calls[name] = calls[name];
    }
  }
  out.queued_ahead = held == repeats;
  for (const std::string& name : order) {
    StepProfile::Op op;
    op.name = name;
    op.calls = op_calls[name];
    op.ms = profile_median(op_ms[name]);
    op.bytes = bytes_per_call.count(name) ? bytes_per_call[name] * op.calls : 0;
    out.ops_ms += op.ms;
    out.ops.push_back(op);
  }

  // 2. The graph replay alone (decode steps that have one).
  if (step.decode && step.tokens <= max_num_seqs_ && graphs_allowed_) {
    prepare_step(plan, step);
    run_graph(step);  // captures it on first use
    std::vector<double> ms;
    for (int rep = 0; rep < repeats; ++rep) {
      prepare_step(plan, step);
      trail.restart();
      mark("start");
      run_graph(step);
      mark("graph");
      check(cudaStreamSynchronize(stream_), "replaying the graph");
      float t = 0;
      check(cudaEventElapsedTime(&t, trail.event(0), trail.event(1)), "reading a profile event");
      ms.push_back(t);
    }
    out.graph_ms = profile_median(ms);
  }

  // 3. Whole calls as the engine makes them, host wall time.
  auto wall = [&](auto&& call) {
    call();  // warm: graph capture, buffer growth, cuBLASLt plans
    std::vector<double> ms;
    for (int rep = 0; rep < repeats; ++rep) {
      const double t0 = now_ms();
      call();
      ms.push_back(now_ms() - t0);
    }
    return profile_median(ms);
  };
  std::vector<float> logits;
  std::vector<int32_t> ids;
  out.forward_ms = wall([&] { forward(plan, logits); });
  const int64_t copy_rows = std::min<int64_t>(R, logits_capacity_);
  out.logits_copy_ms = wall([&] {
    check(cudaMemcpyAsync(logits.data(), logits_.get(),
                          static_cast<size_t>(copy_rows * V) * sizeof(float),
                          cudaMemcpyDeviceToHost, stream_),
          "copying logits");
    check(cudaStreamSynchronize(stream_), "copying logits");
  });
  const std::vector<RowSampling> greedy(static_cast<size_t>(R));
  out.greedy_ms = wall([&] { forward_sample(plan, greedy, ids); });
  std::vector<RowSampling> sampled(static_cast<size_t>(R));
  for (size_t i = 0; i < sampled.size(); ++i)
    sampled[i] = {1.0f, 0, 0.9f, 0.0f, (static_cast<double>(i) + 0.5) / static_cast<double>(R)};
  out.sampled_ms = wall([&] { forward_sample(plan, sampled, ids); });
  return out;
}

}  // namespace sy
