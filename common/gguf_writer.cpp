#include "common/gguf_writer.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <algorithm>
#include <memory>
#include <thread>
#include <stdexcept>

#include "common/check.h"

namespace sy::gguf {
namespace {

class Out {
 public:
  explicit Out(const std::string& path) : path_(path), f_(std::fopen(path.c_str(), "wb")) {
    if (!f_) throw std::runtime_error(path + ": cannot create: " + std::strerror(errno));
  }
  ~Out() {
    if (f_) std::fclose(f_);
  }
  void bytes(const void* p, size_t n) {
    if (n && std::fwrite(p, 1, n, f_) != n) throw std::runtime_error(path_ + ": write failed: " + std::strerror(errno));
    pos_ += n;
  }
  template <typename T>
  void pod(T v) {
    bytes(&v, sizeof v);
  }
  void str(const std::string& s) {
    pod<uint64_t>(s.size());
    bytes(s.data(), s.size());
  }
  void pad_to(size_t align) {
    static const uint8_t zeros[256] = {};
    while (pos_ % align) bytes(zeros, std::min<size_t>(align - pos_ % align, sizeof zeros));
  }
  void close() {
    if (std::fclose(f_) != 0) {
      f_ = nullptr;
      throw std::runtime_error(path_ + ": close failed: " + std::strerror(errno));
    }
    f_ = nullptr;
  }
  size_t pos() const { return pos_; }

 private:
  std::string path_;
  FILE* f_;
  size_t pos_ = 0;
};

void write_scalar(Out& o, ValueType t, int64_t i, double f) {
  switch (t) {
    case ValueType::kU8: o.pod<uint8_t>(static_cast<uint8_t>(i)); break;
    case ValueType::kI8: o.pod<int8_t>(static_cast<int8_t>(i)); break;
    case ValueType::kU16: o.pod<uint16_t>(static_cast<uint16_t>(i)); break;
    case ValueType::kI16: o.pod<int16_t>(static_cast<int16_t>(i)); break;
    case ValueType::kU32: o.pod<uint32_t>(static_cast<uint32_t>(i)); break;
    case ValueType::kI32: o.pod<int32_t>(static_cast<int32_t>(i)); break;
    case ValueType::kU64: o.pod<uint64_t>(static_cast<uint64_t>(i)); break;
    case ValueType::kI64: o.pod<int64_t>(i); break;
    case ValueType::kBool: o.pod<uint8_t>(i ? 1 : 0); break;
    case ValueType::kF32: o.pod<float>(static_cast<float>(f)); break;
    case ValueType::kF64: o.pod<double>(f); break;
    default: SY_CHECK_MSG(false, "not a scalar type");
  }
}

void write_value(Out& o, const Value& v) {
  if (v.type == ValueType::kString) {
    o.str(v.string_value);
    return;
  }
  if (v.type != ValueType::kArray) {
    write_scalar(o, v.type, v.int_value, v.float_value);
    return;
  }
  o.pod<uint32_t>(static_cast<uint32_t>(v.elem_type));
  o.pod<uint64_t>(v.array_size());
  for (const auto& s : v.strings) o.str(s);
  for (int64_t i : v.ints) write_scalar(o, v.elem_type, i, 0);
  for (double f : v.floats) write_scalar(o, v.elem_type, 0, f);
  for (const auto& a : v.arrays) write_value(o, a);
}

}  // namespace

uint32_t ggml_type_id(DType t) {
  switch (t) {
    case DType::kF32: return 0;
    case DType::kF16: return 1;
    case DType::kQ8_0: return 8;
    case DType::kBF16: return 30;
    case DType::kQ4_0: return 2;
    case DType::kQ4_K: return 12;
    case DType::kQ5_K: return 13;
    case DType::kQ6_K: return 14;
  }
  return 0;
}

void Writer::set(std::string key, Value v) {
  for (auto& kv : metadata_)
    if (kv.key == key) {
      kv.value = std::move(v);
      return;
    }
  metadata_.push_back({std::move(key), std::move(v)});
}

namespace {
Value scalar_value(ValueType t, int64_t i, double f = 0) {
  Value v;
  v.type = t;
  v.int_value = i;
  v.float_value = f;
  return v;
}
Value array_value(ValueType elem) {
  Value v;
  v.type = ValueType::kArray;
  v.elem_type = elem;
  return v;
}
}  // namespace

void Writer::set_string(std::string key, std::string v) {
  Value x = scalar_value(ValueType::kString, 0);
  x.string_value = std::move(v);
  set(std::move(key), std::move(x));
}
void Writer::set_u32(std::string key, uint32_t v) { set(std::move(key), scalar_value(ValueType::kU32, v)); }
void Writer::set_i32(std::string key, int32_t v) { set(std::move(key), scalar_value(ValueType::kI32, v)); }
void Writer::set_f32(std::string key, float v) { set(std::move(key), scalar_value(ValueType::kF32, 0, v)); }
void Writer::set_bool(std::string key, bool v) { set(std::move(key), scalar_value(ValueType::kBool, v)); }
void Writer::set_string_array(std::string key, std::vector<std::string> v) {
  Value x = array_value(ValueType::kString);
  x.strings = std::move(v);
  set(std::move(key), std::move(x));
}
void Writer::set_i32_array(std::string key, std::vector<int64_t> v) {
  Value x = array_value(ValueType::kI32);
  x.ints = std::move(v);
  set(std::move(key), std::move(x));
}
void Writer::set_f32_array(std::string key, std::vector<double> v) {
  Value x = array_value(ValueType::kF32);
  x.floats = std::move(v);
  set(std::move(key), std::move(x));
}

void Writer::add_tensor(std::string name, DType dtype, std::vector<int64_t> shape, RowFn rows) {
  SY_CHECK(!shape.empty() && shape.size() <= 4);
  SY_CHECK(dtype_bytes(dtype, shape.back()).has_value());
  tensors_.push_back({std::move(name), dtype, std::move(shape), std::move(rows)});
}

void Writer::add_tensor_bytes(std::string name, DType dtype, std::vector<int64_t> shape, std::vector<uint8_t> bytes) {
  SY_CHECK(!shape.empty());
  const auto row_size = dtype_bytes(dtype, shape.back());
  SY_CHECK_MSG(row_size.has_value(), "tensor %s: a row of %s is not whole blocks", name.c_str(), dtype_name(dtype));
  const size_t row_bytes = *row_size;
  auto data = std::make_shared<std::vector<uint8_t>>(std::move(bytes));
  int64_t rows = 1;
  for (size_t i = 0; i + 1 < shape.size(); ++i) rows *= shape[i];
  SY_CHECK_MSG(data->size() == row_bytes * static_cast<size_t>(rows), "tensor %s: byte size does not match its shape", name.c_str());
  add_tensor(std::move(name), dtype, std::move(shape),
             [data, row_bytes](int64_t row, uint8_t* out) { std::memcpy(out, data->data() + row * row_bytes, row_bytes); });
}

void Writer::write(const std::string& path) const {
  Out o(path);
  o.pod<uint32_t>(0x46554747);
  o.pod<uint32_t>(3);
  o.pod<uint64_t>(tensors_.size());
  const bool has_alignment_key = [&] {
    for (const auto& kv : metadata_)
      if (kv.key == "general.alignment") return true;
    return false;
  }();
  o.pod<uint64_t>(metadata_.size() + (alignment_ != 32 && !has_alignment_key ? 1 : 0));
  for (const auto& kv : metadata_) {
    o.str(kv.key);
    o.pod<uint32_t>(static_cast<uint32_t>(kv.value.type));
    write_value(o, kv.value);
  }
  if (alignment_ != 32 && !has_alignment_key) {
    o.str("general.alignment");
    o.pod<uint32_t>(static_cast<uint32_t>(ValueType::kU32));
    o.pod<uint32_t>(alignment_);
  }
  std::vector<size_t> row_bytes(tensors_.size()), rows(tensors_.size());
  uint64_t offset = 0;
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const Tensor& t = tensors_[i];
    o.str(t.name);
    o.pod<uint32_t>(static_cast<uint32_t>(t.shape.size()));
    for (auto it = t.shape.rbegin(); it != t.shape.rend(); ++it) o.pod<uint64_t>(static_cast<uint64_t>(*it));
    o.pod<uint32_t>(ggml_type_id(t.dtype));
    o.pod<uint64_t>(offset);
    row_bytes[i] = *dtype_bytes(t.dtype, t.shape.back());
    rows[i] = 1;
    for (size_t d = 0; d + 1 < t.shape.size(); ++d) rows[i] *= static_cast<size_t>(t.shape[d]);
    offset += row_bytes[i] * rows[i];
    offset = (offset + alignment_ - 1) / alignment_ * alignment_;
  }
  o.pad_to(alignment_);
  // Rows are produced in chunks of about 64 MiB, the rows of a chunk on all cores (row
  // producers are pure functions of the row index), then written in order: an 8B model's
  // 16 GB come out in seconds rather than minutes.
  const size_t threads = std::max(1u, std::thread::hardware_concurrency());
  std::vector<uint8_t> buf;
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const size_t rb = row_bytes[i];
    const size_t chunk = std::max<size_t>(1, (size_t{64} << 20) / std::max<size_t>(rb, 1));
    for (size_t r0 = 0; r0 < rows[i]; r0 += chunk) {
      const size_t n = std::min(chunk, rows[i] - r0);
      buf.resize(n * rb);
      auto produce = [&, r0, n](size_t t, size_t stride) {
        for (size_t r = t; r < n; r += stride) tensors_[i].rows(static_cast<int64_t>(r0 + r), buf.data() + r * rb);
      };
      const size_t k = std::min(threads, n);
      if (k <= 1 || n * rb < (size_t{1} << 20)) {
        produce(0, 1);
      } else {
        std::vector<std::thread> pool;
        for (size_t t = 0; t < k; ++t) pool.emplace_back(produce, t, k);
        for (auto& th : pool) th.join();
      }
      o.bytes(buf.data(), buf.size());
    }
    o.pad_to(alignment_);
  }
  o.close();
}

}  // namespace sy::gguf
