#include "bench/loadgen/runner.h"

#include <boost/asio/steady_timer.hpp>
#include <functional>
#include <memory>
#include <random>

namespace sy::bench {

namespace {

Clock::duration to_duration(double seconds) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

}  // namespace

Runner::Runner(net::io_context& ioc, const Target& target, const Workload& workload,
               const RequestTemplate& request, const ClientOptions& client,
               const MultiTurnSpec& multi_turn)
    : ioc_(ioc),
      target_(target),
      workload_(workload),
      request_(request),
      client_(client),
      multi_turn_(multi_turn) {}

LevelResult Runner::run_level(const LevelSpec& spec) {
  LevelResult result;
  result.spec = spec;
  if (spec.warmup > 0) result.warmup = run_phase(spec, spec.warmup, 0, true);
  result.measured = run_phase(spec, spec.num_requests, spec.duration_s, false);
  return result;
}

void Runner::issue(bool warmup, StreamingRequest::Done done, Conversations* conversations,
                   int64_t user) {
  RequestRecord record;
  record.index = next_index_++;
  record.warmup = warmup;
  const WorkItem item = conversations ? conversations->next(user) : workload_.item(record.index);
  record.max_tokens = requested_max_tokens(item, request_);
  std::make_shared<StreamingRequest>(ioc_, target_, pool_, client_, std::move(record),
                                     endpoint_path(item.endpoint), request_body(item, request_),
                                     std::move(done))
      ->run();
}

std::vector<RequestRecord> Runner::run_phase(const LevelSpec& spec, int64_t count,
                                             double duration_s, bool warmup) {
  std::vector<RequestRecord> out;
  int64_t issued = 0;
  const Clock::time_point start = Clock::now();
  const Clock::time_point deadline =
      duration_s > 0 ? start + to_duration(duration_s) : Clock::time_point::max();
  auto more = [&] { return (count <= 0 || issued < count) && Clock::now() < deadline; };
  auto collect = [&out](RequestRecord&& r) { out.push_back(std::move(r)); };

  // Declared out here so that they outlive ioc_.run(), which runs their handlers.
  std::function<void(int64_t)> next_for_user;
  std::function<void()> arrive;
  boost::asio::steady_timer timer(ioc_);
  std::mt19937_64 rng(spec.seed + (warmup ? 1 : 0));
  std::exponential_distribution<double> gap_s(spec.rate > 0 ? spec.rate : 1.0);
  Clock::time_point next_arrival = start;

  std::unique_ptr<Conversations> conversations;
  if (spec.mode == LevelSpec::Mode::kClosed) {
    if (multi_turn_.turns > 0)
      conversations = std::make_unique<Conversations>(multi_turn_, spec.concurrency);
    // Each user sends its next request from the completion of its last one.
    next_for_user = [&](int64_t user) {
      if (!more()) return;
      ++issued;
      issue(
          warmup,
          [&, user](RequestRecord&& r) {
            if (conversations) conversations->finished(user, r);
            collect(std::move(r));
            next_for_user(user);
          },
          conversations.get(), user);
    };
    for (int64_t u = 0; u < spec.concurrency; ++u) next_for_user(u);
  } else {
    // Arrivals follow an absolute schedule, so a late timer does not push the rest back.
    arrive = [&] {
      ++issued;
      issue(warmup, collect);
      next_arrival += to_duration(gap_s(rng));
      if ((count > 0 && issued >= count) || next_arrival >= deadline) return;
      timer.expires_at(next_arrival);
      timer.async_wait([&](boost::system::error_code ec) {
        if (!ec) arrive();
      });
    };
    if (more()) arrive();
  }
  ioc_.restart();
  ioc_.run();
  return out;
}

}  // namespace sy::bench
