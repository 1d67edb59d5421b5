#include "bench/faultproxy/toxic.h"

#include <array>
#include <set>
#include <string_view>

namespace sy::faultproxy {
namespace {

constexpr int64_t kMaxMs = 24 * 3600 * 1000;  // a day
constexpr int64_t kMaxBytes = int64_t{1} << 50;

struct TypeInfo {
  ToxicType type;
  const char* name;
  std::set<std::string_view> fields;  // besides type and probability
};

const std::array<TypeInfo, 7>& types() {
  static const std::array<TypeInfo, 7> kTypes = {{
      {ToxicType::kLatency, "latency", {"direction", "latency_ms", "jitter_ms"}},
      {ToxicType::kBandwidth, "bandwidth", {"direction", "rate"}},
      {ToxicType::kStall, "stall", {"direction", "bytes", "after_ms"}},
      {ToxicType::kReset, "reset", {"direction", "bytes", "after_ms"}},
      {ToxicType::kBlackhole, "blackhole", {"direction"}},
      {ToxicType::kSlowClose, "slow_close", {"direction", "delay_ms"}},
      {ToxicType::kDown, "down", {}},
  }};
  return kTypes;
}

const TypeInfo* find_type(std::string_view name) {
  for (const auto& t : types())
    if (name == t.name) return &t;
  return nullptr;
}

std::string type_list() {
  std::string s;
  for (const auto& t : types()) s += std::string(s.empty() ? "" : ", ") + t.name;
  return s;
}

}  // namespace

bool Toxic::affects_open_connections() const {
  return type == ToxicType::kLatency || type == ToxicType::kBandwidth || type == ToxicType::kStall;
}

const char* toxic_type_name(ToxicType t) {
  for (const auto& info : types())
    if (info.type == t) return info.name;
  return "unknown";
}

std::optional<ApiError> parse_toxic(const Json& obj, Toxic& out) {
  if (!obj.is_object())
    return ApiError::bad_request(std::string("a toxic must be a JSON object, not ") +
                                 json_type_phrase(obj));
  FieldReader r(obj);
  std::string type_name;
  if (!r.get_string("type", type_name)) {
    if (!r.ok()) return r.error();
    return ApiError::bad_request("'type' is required (one of " + type_list() + ")", "type");
  }
  const TypeInfo* info = find_type(type_name);
  if (!info)
    return ApiError::bad_request(
        "unknown toxic type '" + type_name + "' (one of " + type_list() + ")", "type");
  for (const auto& [key, value] : obj.items()) {
    if (key == "type" || key == "probability" || info->fields.count(key)) continue;
    return ApiError::bad_request("field '" + key + "' does not apply to a " + type_name + " toxic",
                                 key);
  }

  Toxic t;
  t.type = info->type;
  std::string direction;
  if (r.get_string("direction", direction)) {
    if (direction == "up")
      t.direction = kUp;
    else if (direction == "down")
      t.direction = kDown;
    else if (direction == "both")
      t.direction = kBoth;
    else
      r.fail("'direction' must be \"up\", \"down\" or \"both\", got \"" + direction + "\"",
             "direction");
  }
  if (const Json* p = r.find("probability"); p && r.ok()) {
    if (!p->is_number() || !(p->get<double>() >= 0.0 && p->get<double>() <= 1.0))
      r.fail("'probability' must be a number in [0, 1]", "probability");
    else
      t.probability = p->get<double>();
  }
  switch (t.type) {
    case ToxicType::kLatency:
      if (!r.get_int("latency_ms", 0, kMaxMs, t.latency_ms) && r.ok())
        r.fail("a latency toxic needs 'latency_ms'", "latency_ms");
      r.get_int("jitter_ms", 0, kMaxMs, t.jitter_ms);
      break;
    case ToxicType::kBandwidth:
      if (!r.get_int("rate", 1, kMaxBytes, t.rate) && r.ok())
        r.fail("a bandwidth toxic needs 'rate' (bytes/s)", "rate");
      break;
    case ToxicType::kStall:
    case ToxicType::kReset: {
      int64_t v = 0;
      if (r.get_int("bytes", 0, kMaxBytes, v)) t.bytes = v;
      if (r.get_int("after_ms", 0, kMaxMs, v)) t.after_ms = v;
      break;
    }
    case ToxicType::kSlowClose:
      if (!r.get_int("delay_ms", 0, kMaxMs, t.delay_ms) && r.ok())
        r.fail("a slow_close toxic needs 'delay_ms'", "delay_ms");
      break;
    case ToxicType::kBlackhole:
    case ToxicType::kDown:
      break;
  }
  if (!r.ok()) return r.error();
  out = t;
  return std::nullopt;
}

Json toxic_to_json(const Toxic& t) {
  Json j;
  j["type"] = toxic_type_name(t.type);
  if (t.type != ToxicType::kDown)
    j["direction"] = t.direction == kUp ? "up" : t.direction == kDown ? "down" : "both";
  j["probability"] = t.probability;
  switch (t.type) {
    case ToxicType::kLatency:
      j["latency_ms"] = t.latency_ms;
      j["jitter_ms"] = t.jitter_ms;
      break;
    case ToxicType::kBandwidth:
      j["rate"] = t.rate;
      break;
    case ToxicType::kStall:
    case ToxicType::kReset:
      if (t.bytes) j["bytes"] = *t.bytes;
      if (t.after_ms) j["after_ms"] = *t.after_ms;
      break;
    case ToxicType::kSlowClose:
      j["delay_ms"] = t.delay_ms;
      break;
    case ToxicType::kBlackhole:
    case ToxicType::kDown:
      break;
  }
  return j;
}

}  // namespace sy::faultproxy
