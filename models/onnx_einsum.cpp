// ONNX's Einsum in general (models/onnx_einsum.h): transposes, reductions, reshapes and one
// matmul or broadcast mul.
#include "models/onnx_einsum.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <numeric>

#include "core/error.h"
#include "layers/binary.h"
#include "layers/matmul.h"
#include "layers/reduce.h"
#include "layers/reshape.h"
#include "layers/transpose.h"

namespace frugal {

namespace {

bool has(const std::string& s, char c) {
  return s.find(c) != std::string::npos;
}

// x transposed so that its axes follow `to` (letters of x's term `from`), unless already so.
Value permute(Value x, const std::string& from, const std::string& to) {
  std::vector<int64_t> perm;
  for (char c : to) perm.push_back(static_cast<int64_t>(from.find(c)));
  std::vector<int64_t> same(perm.size());
  std::iota(same.begin(), same.end(), 0);
  return perm == same ? x : transpose(x, perm);
}

Value reshaped(Value x, const std::vector<int64_t>& dims) {
  return x.shape().dims() == dims ? x : reshape(x, Shape(dims));
}

}  // namespace

EinsumEquation parse_einsum(const std::string& equation) {
  std::string eq;
  for (char c : equation)
    if (c != ' ') eq += c;
  const size_t arrow = eq.find("->");
  FRUGAL_CHECK(arrow != std::string::npos && eq.find("->", arrow + 1) == std::string::npos,
               "equation '", eq, "': expected 'A->Y' or 'A,B->Y' with an explicit output");
  EinsumEquation e;
  e.output = eq.substr(arrow + 2);
  const std::string in = eq.substr(0, arrow);
  const size_t comma = in.find(',');
  e.operands.push_back(in.substr(0, comma));
  if (comma != std::string::npos) e.operands.push_back(in.substr(comma + 1));
  std::vector<std::string> terms = e.operands;
  terms.push_back(e.output);
  for (const std::string& t : terms) {
    FRUGAL_CHECK(!t.empty() || &t == &terms.back(), "equation '", eq, "': an empty operand term");
    for (size_t p = 0; p < t.size(); ++p) {
      FRUGAL_CHECK(std::isalpha(static_cast<unsigned char>(t[p])), "equation '", eq,
                   "': only letters are imported (no ellipsis, no more than two operands)");
      FRUGAL_CHECK(t.find(t[p], p + 1) == std::string::npos, "equation '", eq, "': letter '", t[p],
                   "' twice in one term (a diagonal) is not imported");
    }
  }
  for (char c : e.output)
    FRUGAL_CHECK(std::any_of(e.operands.begin(), e.operands.end(),
                             [c](const std::string& t) { return has(t, c); }),
                 "equation '", eq, "': output letter '", c, "' is in no operand");
  return e;
}

Value record_einsum(const EinsumEquation& e, const std::vector<Value>& xs) {
  FRUGAL_CHECK(xs.size() == e.operands.size(), "einsum: ", e.operands.size(), " terms for ",
               xs.size(), " operands");
  std::map<char, int64_t> extent;
  for (size_t k = 0; k < xs.size(); ++k) {
    const std::string& t = e.operands[k];
    const Shape& s = xs[k].shape();
    FRUGAL_CHECK(s.rank() == static_cast<int>(t.size()), "einsum: term '", t, "' for operand ", s);
    for (size_t p = 0; p < t.size(); ++p) {
      const int64_t d = s[static_cast<int>(p)];
      auto [it, added] = extent.emplace(t[p], d);
      FRUGAL_CHECK(added || it->second == d, "einsum: letter '", t[p], "' is ", it->second,
                   " in one operand and ", d, " in another");
    }
  }
  auto dims = [&](const std::string& letters) {
    std::vector<int64_t> d;
    for (char c : letters) d.push_back(extent.at(c));
    return d;
  };
  auto product = [&](const std::string& letters) {
    int64_t p = 1;
    for (char c : letters) p *= extent.at(c);
    return p;
  };
  // x (term t) with the letters `alone` summed out, its other axes in the order `keep`.
  auto sum_out = [&](Value x, const std::string& t, const std::string& keep,
                     const std::string& alone) {
    if (alone.empty()) return permute(x, t, keep);
    FRUGAL_CHECK(!keep.empty(), "einsum: every axis of an operand summed out is not imported");
    return reduce(permute(x, t, keep + alone), Reduction::sum, static_cast<int>(alone.size()));
  };
  const std::string& a = e.operands[0];
  const std::string& y = e.output;
  if (xs.size() == 1) {  // a transpose, a sum over the letters the output drops, or both
    std::string alone;
    for (char c : a)
      if (!has(y, c)) alone += c;
    return sum_out(xs[0], a, y, alone);
  }
  const std::string& b = e.operands[1];
  std::string batch, kept_a, kept_b, contracted, alone_a, alone_b;
  for (char c : y) {
    if (has(a, c) && has(b, c)) batch += c;
    if (has(a, c) && !has(b, c)) kept_a += c;
    if (has(b, c) && !has(a, c)) kept_b += c;
  }
  for (char c : a) {
    if (!has(y, c) && has(b, c)) contracted += c;
    if (!has(y, c) && !has(b, c)) alone_a += c;
  }
  for (char c : b)
    if (!has(y, c) && !has(a, c)) alone_b += c;
  const Value xa = sum_out(xs[0], a, batch + kept_a + contracted, alone_a);
  const Value xb = sum_out(xs[1], b, batch + contracted + kept_b, alone_b);
  std::vector<int64_t> shape_a = dims(batch), shape_b = dims(batch);
  Value product_ab;
  if (contracted.empty()) {  // a broadcast product: (batch, kept_a, 1...) * (batch, 1..., kept_b)
    for (int64_t d : dims(kept_a)) shape_a.push_back(d), shape_b.push_back(1);
    for (int64_t d : dims(kept_b)) shape_a.push_back(1), shape_b.push_back(d);
    product_ab = mul(reshaped(xa, shape_a), reshaped(xb, shape_b));
  } else {  // (batch, I, K) x (batch, K, J)
    shape_a.push_back(product(kept_a));
    shape_a.push_back(product(contracted));
    shape_b.push_back(product(contracted));
    shape_b.push_back(product(kept_b));
    std::vector<int64_t> out = dims(batch + kept_a + kept_b);
    product_ab = reshaped(matmul(reshaped(xa, shape_a), reshaped(xb, shape_b)), out);
  }
  return permute(product_ab, batch + kept_a + kept_b, y);
}

}  // namespace frugal
