#include "common/gguf.h"

#include <cstring>

#include "common/error.h"

namespace sy::gguf {
namespace {

constexpr uint32_t kMagic = 0x46554747;  // "GGUF" little-endian
constexpr uint32_t kMaxDims = 4;         // GGML_MAX_DIMS
constexpr int kMaxArrayDepth = 8;        // nested arrays; bounds recursion on hostile input

// Bounds-checked little-endian cursor over the header bytes.
class Cursor {
 public:
  Cursor(const uint8_t* p, size_t n) : p_(p), n_(n) {}
  size_t pos() const { return pos_; }
  size_t remaining() const { return n_ - pos_; }

  bool read(void* out, size_t k) {
    if (k > remaining()) return false;
    std::memcpy(out, p_ + pos_, k);
    pos_ += k;
    return true;
  }
  template <typename T>
  bool get(T* out) {
    return read(out, sizeof(T));
  }
  bool get_string(std::string* out) {
    uint64_t len = 0;
    if (!get(&len) || len > remaining()) return false;
    out->assign(reinterpret_cast<const char*>(p_ + pos_), static_cast<size_t>(len));
    pos_ += static_cast<size_t>(len);
    return true;
  }

 private:
  const uint8_t* p_;
  size_t n_;
  size_t pos_ = 0;
};

size_t scalar_size(ValueType t) {
  switch (t) {
    case ValueType::kU8:
    case ValueType::kI8:
    case ValueType::kBool: return 1;
    case ValueType::kU16:
    case ValueType::kI16: return 2;
    case ValueType::kU32:
    case ValueType::kI32:
    case ValueType::kF32: return 4;
    case ValueType::kU64:
    case ValueType::kI64:
    case ValueType::kF64: return 8;
    case ValueType::kString:
    case ValueType::kArray: return 0;
  }
  return 0;
}

bool valid_value_type(uint32_t t) { return t <= static_cast<uint32_t>(ValueType::kF64); }

// Reads one scalar of type t into int_value / float_value.
bool read_scalar(Cursor& c, ValueType t, int64_t* i, double* f) {
  switch (t) {
    case ValueType::kU8: { uint8_t v; if (!c.get(&v)) return false; *i = v; return true; }
    case ValueType::kI8: { int8_t v; if (!c.get(&v)) return false; *i = v; return true; }
    case ValueType::kU16: { uint16_t v; if (!c.get(&v)) return false; *i = v; return true; }
    case ValueType::kI16: { int16_t v; if (!c.get(&v)) return false; *i = v; return true; }
    case ValueType::kU32: { uint32_t v; if (!c.get(&v)) return false; *i = v; return true; }
    case ValueType::kI32: { int32_t v; if (!c.get(&v)) return false; *i = v; return true; }
    case ValueType::kU64: { uint64_t v; if (!c.get(&v)) return false; *i = static_cast<int64_t>(v); return true; }
    case ValueType::kI64: { int64_t v; if (!c.get(&v)) return false; *i = v; return true; }
    case ValueType::kBool: {
      uint8_t v;
      if (!c.get(&v)) return false;
      if (v > 1) return false;
      *i = v;
      return true;
    }
    case ValueType::kF32: { float v; if (!c.get(&v)) return false; *f = v; return true; }
    case ValueType::kF64: { double v; if (!c.get(&v)) return false; *f = v; return true; }
    default: return false;
  }
}

std::optional<DType> supported_dtype(uint32_t id) {
  switch (id) {
    case 0: return DType::kF32;
    case 1: return DType::kF16;
    case 2: return DType::kQ4_0;
    case 8: return DType::kQ8_0;
    case 12: return DType::kQ4_K;
    case 13: return DType::kQ5_K;
    case 14: return DType::kQ6_K;
    case 30: return DType::kBF16;
    default: return std::nullopt;
  }
}

}  // namespace

const char* value_type_name(ValueType t) {
  switch (t) {
    case ValueType::kU8: return "u8";
    case ValueType::kI8: return "i8";
    case ValueType::kU16: return "u16";
    case ValueType::kI16: return "i16";
    case ValueType::kU32: return "u32";
    case ValueType::kI32: return "i32";
    case ValueType::kF32: return "f32";
    case ValueType::kBool: return "bool";
    case ValueType::kString: return "string";
    case ValueType::kArray: return "array";
    case ValueType::kU64: return "u64";
    case ValueType::kI64: return "i64";
    case ValueType::kF64: return "f64";
  }
  return "?";
}

const char* ggml_type_name(uint32_t id) {
  static const char* const kNames[] = {
      "F32",     "F16",    "Q4_0",    "Q4_1",  "Q4_2",  "Q4_3",  "Q5_0",    "Q5_1",
      "Q8_0",    "Q8_1",   "Q2_K",    "Q3_K",  "Q4_K",  "Q5_K",  "Q6_K",    "Q8_K",
      "IQ2_XXS", "IQ2_XS", "IQ3_XXS", "IQ1_S", "IQ4_NL", "IQ3_S", "IQ2_S",   "IQ4_XS",
      "I8",      "I16",    "I32",     "I64",   "F64",   "IQ1_M", "BF16",    "Q4_0_4_4",
      "Q4_0_4_8", "Q4_0_8_8", "TQ1_0", "TQ2_0", "IQ4_NL_4_4", "IQ4_NL_4_8", "IQ4_NL_8_8",
      "MXFP4"};
  if (id >= sizeof(kNames) / sizeof(kNames[0])) return nullptr;
  return kNames[id];
}

bool is_integer_type(ValueType type) {
  switch (type) {
    case ValueType::kU8: case ValueType::kI8: case ValueType::kU16: case ValueType::kI16:
    case ValueType::kU32: case ValueType::kI32: case ValueType::kU64: case ValueType::kI64:
    case ValueType::kBool: return true;
    default: return false;
  }
}

bool Value::is_integer() const { return is_integer_type(type); }

bool Value::is_float() const { return type == ValueType::kF32 || type == ValueType::kF64; }

size_t Value::array_size() const {
  return ints.size() + floats.size() + strings.size() + arrays.size();
}

std::unique_ptr<File> File::open(const std::string& path) {
  auto map = std::make_unique<MappedFile>(path);
  std::unique_ptr<File> f(new File());
  f->label_ = path;
  f->parse_all(map->data(), map->size());
  f->map_ = std::move(map);
  return f;
}

std::unique_ptr<File> File::parse(const uint8_t* bytes, size_t size, std::string label) {
  std::unique_ptr<File> f(new File());
  f->label_ = std::move(label);
  f->parse_all(bytes, size);
  return f;
}

void File::fail(const std::string& what) const {
  throw ModelFileError(label_ + ": invalid GGUF: " + what);
}

namespace {

// Reads a value of type t (array elements recurse). Returns false on truncation or
// an invalid encoding; `err` then says what.
bool read_value(Cursor& c, ValueType t, Value* v, int depth, std::string* err) {
  v->type = t;
  if (t == ValueType::kString) {
    if (!c.get_string(&v->string_value)) return *err = "string runs past the end", false;
    return true;
  }
  if (t != ValueType::kArray) {
    if (!read_scalar(c, t, &v->int_value, &v->float_value)) {
      *err = std::string("truncated or invalid ") + value_type_name(t);
      return false;
    }
    return true;
  }
  if (depth >= kMaxArrayDepth) return *err = "arrays nested too deeply", false;
  uint32_t et = 0;
  uint64_t n = 0;
  if (!c.get(&et) || !c.get(&n)) return *err = "truncated array header", false;
  if (!valid_value_type(et)) return *err = "array of unknown value type " + std::to_string(et), false;
  v->elem_type = static_cast<ValueType>(et);
  // Every element takes at least one byte (a string or array at least 8), so a count
  // above the bytes left is a lie; refuse it before allocating.
  size_t min_elem = scalar_size(v->elem_type);
  if (min_elem == 0) min_elem = 8;
  if (n > c.remaining() / min_elem) return *err = "array of " + std::to_string(n) + " elements runs past the end", false;
  const auto count = static_cast<size_t>(n);
  switch (v->elem_type) {
    case ValueType::kString:
      v->strings.resize(count);
      for (size_t i = 0; i < count; ++i)
        if (!c.get_string(&v->strings[i])) return *err = "array string runs past the end", false;
      return true;
    case ValueType::kArray:
      v->arrays.resize(count);
      for (size_t i = 0; i < count; ++i) {
        uint32_t inner = static_cast<uint32_t>(ValueType::kArray);
        if (!read_value(c, static_cast<ValueType>(inner), &v->arrays[i], depth + 1, err)) return false;
      }
      return true;
    case ValueType::kF32:
    case ValueType::kF64:
      v->floats.resize(count);
      for (size_t i = 0; i < count; ++i) {
        int64_t unused = 0;
        if (!read_scalar(c, v->elem_type, &unused, &v->floats[i])) return *err = "truncated array", false;
      }
      return true;
    default:
      v->ints.resize(count);
      for (size_t i = 0; i < count; ++i) {
        double unused = 0;
        if (!read_scalar(c, v->elem_type, &v->ints[i], &unused)) return *err = "truncated or invalid array element", false;
      }
      return true;
  }
}

}  // namespace

void File::parse_all(const uint8_t* bytes, size_t size) {
  Cursor c(bytes, size);
  uint32_t magic = 0;
  if (!c.get(&magic)) fail("file is shorter than the 4-byte magic");
  if (magic != kMagic) fail("bad magic (not a GGUF file)");
  if (!c.get(&version_)) fail("truncated before the version");
  if (version_ != 2 && version_ != 3) fail("unsupported version " + std::to_string(version_) + " (supported: 2, 3)");
  uint64_t n_tensors = 0, n_kv = 0;
  if (!c.get(&n_tensors) || !c.get(&n_kv)) fail("truncated header counts");
  // Each key-value takes at least 12 bytes and each tensor info at least 24.
  if (n_kv > c.remaining() / 12) fail("metadata count " + std::to_string(n_kv) + " exceeds the file");
  if (n_tensors > c.remaining() / 24) fail("tensor count " + std::to_string(n_tensors) + " exceeds the file");

  metadata_.reserve(static_cast<size_t>(n_kv));
  for (uint64_t i = 0; i < n_kv; ++i) {
    KeyValue kv;
    if (!c.get_string(&kv.key)) fail("metadata key " + std::to_string(i) + " runs past the end");
    uint32_t t = 0;
    if (!c.get(&t)) fail("truncated type of metadata key '" + kv.key + "'");
    if (!valid_value_type(t)) fail("metadata key '" + kv.key + "' has unknown value type " + std::to_string(t));
    std::string err;
    if (!read_value(c, static_cast<ValueType>(t), &kv.value, 0, &err)) fail("metadata key '" + kv.key + "': " + err);
    if (!key_index_.emplace(kv.key, metadata_.size()).second) fail("duplicate metadata key '" + kv.key + "'");
    metadata_.push_back(std::move(kv));
  }

  if (const Value* a = find("general.alignment")) {
    if (!a->is_integer() || a->int_value <= 0 || a->int_value > (1 << 20) || (a->int_value & (a->int_value - 1)) != 0)
      fail("general.alignment must be a power of two");
    alignment_ = static_cast<size_t>(a->int_value);
  }

  struct Pending {
    uint32_t type;
    uint64_t offset;
  };
  std::vector<Pending> pending;
  tensors_.reserve(static_cast<size_t>(n_tensors));
  for (uint64_t i = 0; i < n_tensors; ++i) {
    TensorInfo t;
    if (!c.get_string(&t.name)) fail("tensor info " + std::to_string(i) + " runs past the end");
    uint32_t n_dims = 0;
    if (!c.get(&n_dims)) fail("tensor '" + t.name + "': truncated");
    if (n_dims == 0 || n_dims > kMaxDims) fail("tensor '" + t.name + "' has " + std::to_string(n_dims) + " dimensions (1 to 4 allowed)");
    std::vector<int64_t> ne(n_dims);
    unsigned __int128 numel = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      uint64_t dim = 0;
      if (!c.get(&dim)) fail("tensor '" + t.name + "': truncated dimensions");
      if (dim == 0 || dim > (uint64_t{1} << 40)) fail("tensor '" + t.name + "' has dimension " + std::to_string(dim));
      ne[d] = static_cast<int64_t>(dim);
      numel *= dim;
      if (numel > (static_cast<unsigned __int128>(1) << 48)) fail("tensor '" + t.name + "' has too many elements");
    }
    Pending p{};
    if (!c.get(&p.type) || !c.get(&p.offset)) fail("tensor '" + t.name + "': truncated type or offset");
    t.shape.assign(ne.rbegin(), ne.rend());
    if (!tensor_index_.emplace(t.name, tensors_.size()).second) fail("duplicate tensor '" + t.name + "'");
    tensors_.push_back(std::move(t));
    pending.push_back(p);
  }

  size_t header_end = c.pos();
  data_offset_ = (header_end + alignment_ - 1) / alignment_ * alignment_;
  if (n_tensors > 0 && data_offset_ > size) fail("tensor data section starts past the end of the file");
  const size_t data_size = size - std::min(size, data_offset_);

  for (size_t i = 0; i < tensors_.size(); ++i) {
    TensorInfo& t = tensors_[i];
    const Pending& p = pending[i];
    auto dt = supported_dtype(p.type);
    if (!dt) {
      const char* name = ggml_type_name(p.type);
      fail("tensor '" + t.name + "' has type " + (name ? std::string(name) : "unknown") + " (" +
           std::to_string(p.type) + "), which Switchyard does not support (supported: F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q5_K, Q6_K)");
    }
    t.dtype = *dt;
    // Blocks never straddle rows (ggml requires it too), so a row is whole blocks.
    if (const int block = dtype_block_values(*dt); t.shape.back() % block != 0)
      fail("tensor '" + t.name + "' is " + dtype_name(*dt) + " but its row length " + std::to_string(t.shape.back()) +
           " is not a multiple of " + std::to_string(block));
    auto nbytes = dtype_bytes(*dt, t.numel());
    if (!nbytes) fail("tensor '" + t.name + "' is too large");
    if (p.offset % alignment_ != 0) fail("tensor '" + t.name + "' offset " + std::to_string(p.offset) + " is not aligned to " + std::to_string(alignment_));
    if (p.offset > data_size || *nbytes > data_size - p.offset)
      fail("tensor '" + t.name + "' " + t.shape_string() + " " + dtype_name(*dt) + " at offset " + std::to_string(p.offset) + " (" +
           std::to_string(*nbytes) + " bytes) runs past the end of the file (data section holds " + std::to_string(data_size) + " bytes)");
    t.nbytes = *nbytes;
    t.data = bytes + data_offset_ + p.offset;
  }
}

const Value* File::find(std::string_view key) const {
  auto it = key_index_.find(std::string(key));
  return it == key_index_.end() ? nullptr : &metadata_[it->second].value;
}

const TensorInfo* File::find_tensor(std::string_view name) const {
  auto it = tensor_index_.find(std::string(name));
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

const Value& File::require(std::string_view key) const {
  const Value* v = find(key);
  if (v == nullptr) throw ModelFileError(label_ + ": missing metadata key '" + std::string(key) + "'");
  return *v;
}

namespace {
[[noreturn]] void wrong_type(const std::string& label, std::string_view key, const char* expected, const Value& v) {
  throw ModelFileError(label + ": metadata key '" + std::string(key) + "' is " + value_type_name(v.type) +
                       (v.type == ValueType::kArray ? std::string(" of ") + value_type_name(v.elem_type) : "") +
                       ", expected " + expected);
}
}  // namespace

std::string File::get_string(std::string_view key) const {
  const Value& v = require(key);
  if (v.type != ValueType::kString) wrong_type(label_, key, "string", v);
  return v.string_value;
}

int64_t File::get_int(std::string_view key) const {
  const Value& v = require(key);
  if (!v.is_integer()) wrong_type(label_, key, "an integer", v);
  return v.int_value;
}

double File::get_float(std::string_view key) const {
  const Value& v = require(key);
  if (v.is_float()) return v.float_value;
  if (v.is_integer()) return static_cast<double>(v.int_value);
  wrong_type(label_, key, "a number", v);
}

bool File::get_bool(std::string_view key) const {
  const Value& v = require(key);
  if (v.type != ValueType::kBool) wrong_type(label_, key, "bool", v);
  return v.int_value != 0;
}

std::string File::get_string_or(std::string_view key, std::string fallback) const {
  return find(key) ? get_string(key) : std::move(fallback);
}
int64_t File::get_int_or(std::string_view key, int64_t fallback) const {
  return find(key) ? get_int(key) : fallback;
}
double File::get_float_or(std::string_view key, double fallback) const {
  return find(key) ? get_float(key) : fallback;
}
bool File::get_bool_or(std::string_view key, bool fallback) const {
  return find(key) ? get_bool(key) : fallback;
}

const std::vector<std::string>& File::get_string_array(std::string_view key) const {
  const Value& v = require(key);
  if (v.type != ValueType::kArray || v.elem_type != ValueType::kString) wrong_type(label_, key, "an array of strings", v);
  return v.strings;
}

const std::vector<int64_t>& File::get_int_array(std::string_view key) const {
  const Value& v = require(key);
  if (v.type != ValueType::kArray || !is_integer_type(v.elem_type)) wrong_type(label_, key, "an array of integers", v);
  return v.ints;
}

const std::vector<double>& File::get_float_array(std::string_view key) const {
  const Value& v = require(key);
  if (v.type != ValueType::kArray || (v.elem_type != ValueType::kF32 && v.elem_type != ValueType::kF64))
    wrong_type(label_, key, "an array of floats", v);
  return v.floats;
}

}  // namespace sy::gguf
