#include "worker/parallel/split_communicator.h"

#include <memory>
#include <string>

namespace sy::parallel {
namespace {

class SplitCommunicator final : public Communicator {
 public:
  SplitCommunicator(std::unique_ptr<Communicator> small, std::unique_ptr<Communicator> large, size_t small_max)
      : small_(std::move(small)), large_(std::move(large)), small_max_(small_max),
        kind_(std::string(small_->kind()) + "+" + std::string(large_->kind())) {}

  std::string_view kind() const override { return kind_; }
  int rank() const override { return small_->rank(); }
  int size() const override { return small_->size(); }
  MemoryKind memory() const override { return small_->memory(); }
  int device() const override { return small_->device(); }

  CommStatus all_reduce_sum(float* data, size_t n, Stream stream) override {
    return pick(n).all_reduce_sum(data, n, stream);
  }
  CommStatus all_gather(const float* send, size_t n, float* recv, Stream stream) override {
    return pick(n).all_gather(send, n, recv, stream);
  }
  CommStatus broadcast(float* data, size_t n, int root, Stream stream) override {
    return pick(n).broadcast(data, n, root, stream);
  }
  CommStatus barrier(Stream stream) override { return small_->barrier(stream); }
  void abort() override {
    small_->abort();
    large_->abort();
  }

 private:
  Communicator& pick(size_t n) { return n <= small_max_ ? *small_ : *large_; }

  std::unique_ptr<Communicator> small_, large_;
  size_t small_max_;
  std::string kind_;
};

}  // namespace

CommunicatorGroup make_split_group(CommunicatorGroup small, CommunicatorGroup large, size_t small_max_floats) {
  if (small.size() != large.size() || small.empty())
    throw CommunicatorError("split communicator: groups of " + std::to_string(small.size()) + " and " +
                            std::to_string(large.size()) + " ranks");
  CommunicatorGroup out;
  for (size_t r = 0; r < small.size(); ++r) {
    if (small[r]->memory() != large[r]->memory() || small[r]->rank() != large[r]->rank() ||
        small[r]->device() != large[r]->device())
      throw CommunicatorError("split communicator: rank " + std::to_string(r) + " differs between the groups");
    out.push_back(std::make_unique<SplitCommunicator>(std::move(small[r]), std::move(large[r]), small_max_floats));
  }
  return out;
}

}  // namespace sy::parallel
