//===- compiler/analysis/BoundSymmetry.cpp - Rank orbits of the bound ---===//
//
// rankOrbits (Bound.h): ranks that an automorphism of the bound graph maps
// onto each other have equal max flows from the super source in every
// Dinkelbach round, so a round needs one flow per orbit.
//
// Candidates come from the names a generated topology gives its devices: a
// number after a word ("su3", "dgx12", "gpu5", "spine17") is an index; a
// number after no letters is the index of its place after the last word
// ("npu3_1_0" has the indexes "npu", "npu#1" and "npu#2", and so does each
// end of "npu3_1_0 -> npu4_1_0"). Three moves of one index's values (in numeric
// order) in every vertex name propose a permutation of the vertices:
// swapping two consecutive values (all of unit 3's devices with unit 4's,
// or box 12 with box 13 in every unit), shifting every value to the next
// one, the last to the first (a torus dimension's rotation), and reversing
// the order (a mesh's or torus's reflection). A proposal counts only
// when it is one: every renamed vertex exists, ranks go to ranks, and every
// ordered vertex pair keeps its summed arc capacity (what a max flow sees).
// The orbits are those of the group the accepted swaps generate
// (union-find). A proposal that is not an automorphism is dropped, so the
// orbits are never coarser than the true ones; at worst they are finer and
// a round computes more flows than it needs.
//
//===----------------------------------------------------------------------===//

#include "compiler/analysis/Bound.h"

#include "support/UnionFind.h"

#include "llvm/ADT/StringExtras.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

namespace topocc::analysis {

namespace {

/// A name cut into text and numbers: "su3-dgx12/gpu5" is "su" 3 "-dgx" 12
/// "/gpu" 5. The word of a number is the letters just before it.
struct NameParts {
  std::vector<std::string> text; ///< text before number i (and the tail)
  std::vector<std::string> words;
  std::vector<std::string> numbers; ///< digits as written
};

NameParts splitName(llvm::StringRef name) {
  NameParts p;
  std::string text;
  std::string lastWord; // the word of the last number that had one
  int since = 0;        // numbers without a word since then
  size_t i = 0;
  while (i < name.size()) {
    if (llvm::isDigit(name[i])) {
      size_t j = i;
      while (j < name.size() && llvm::isDigit(name[j]))
        ++j;
      size_t w = text.size();
      while (w > 0 && llvm::isAlpha(text[w - 1]))
        --w;
      if (w < text.size()) {
        lastWord = text.substr(w);
        since = 0;
        p.words.push_back(lastWord);
      } else {
        p.words.push_back(lastWord + "#" + std::to_string(++since));
      }
      p.text.push_back(std::move(text));
      text.clear();
      p.numbers.push_back(name.substr(i, j - i).str());
      i = j;
    } else {
      text.push_back(name[i++]);
    }
  }
  p.text.push_back(std::move(text));
  return p;
}

/// `p` with each number after `word` written as `to` maps it (numbers
/// `to` does not name stay).
std::string renamed(const NameParts &p, const std::string &word,
                    const std::map<std::string, std::string> &to) {
  std::string out;
  for (size_t i = 0; i < p.numbers.size(); ++i) {
    out += p.text[i];
    const std::string &x = p.numbers[i];
    auto it = p.words[i] == word ? to.find(x) : to.end();
    out += it == to.end() ? x : it->second;
  }
  out += p.text.back();
  return out;
}

/// The value maps rankOrbits proposes for one index with values `vals`
/// (in order): each swap of two consecutive values, the rotation by one
/// and the reversal.
std::vector<std::map<std::string, std::string>>
proposals(const std::vector<std::string> &vals) {
  std::vector<std::map<std::string, std::string>> out;
  const size_t m = vals.size();
  for (size_t i = 0; i + 1 < m; ++i)
    out.push_back({{vals[i], vals[i + 1]}, {vals[i + 1], vals[i]}});
  if (m >= 3) {
    std::map<std::string, std::string> rotate, reverse;
    for (size_t i = 0; i < m; ++i) {
      rotate[vals[i]] = vals[(i + 1) % m];
      reverse[vals[i]] = vals[m - 1 - i];
    }
    out.push_back(std::move(rotate));
    out.push_back(std::move(reverse));
  }
  return out;
}

} // namespace

std::vector<int> rankOrbits(const BoundGraph &g) {
  const int n = static_cast<int>(g.compute.size());
  std::vector<int> rep(n);
  for (int r = 0; r < n; ++r)
    rep[r] = r;
  if (static_cast<int>(g.names.size()) < g.numVertices)
    return rep;
  std::unordered_map<std::string, int> vertexOf;
  for (int v = 0; v < g.numVertices; ++v)
    if (!vertexOf.emplace(g.names[v], v).second)
      return rep; // names that do not tell vertices apart
  std::vector<int> rankOf(g.numVertices, -1);
  for (int r = 0; r < n; ++r)
    rankOf[g.compute[r]] = r;
  // What a max flow sees: the summed capacity of each ordered pair.
  std::unordered_map<uint64_t, int64_t> capacity;
  auto key = [](int u, int v) {
    return static_cast<uint64_t>(u) << 32 | static_cast<uint32_t>(v);
  };
  for (const BoundGraph::Arc &a : g.arcs)
    capacity[key(a.from, a.to)] += a.cap;

  std::vector<NameParts> parts;
  parts.reserve(g.numVertices);
  // Each word's values, in numeric order (then as written).
  std::map<std::string, std::set<std::pair<size_t, std::string>>> values;
  for (int v = 0; v < g.numVertices; ++v) {
    parts.push_back(splitName(g.names[v]));
    const NameParts &p = parts.back();
    for (size_t i = 0; i < p.numbers.size(); ++i)
      values[p.words[i]].insert({p.numbers[i].size(), p.numbers[i]});
  }

  UnionFind orbits(n);
  std::vector<int> perm(g.numVertices);
  for (const auto &[word, sorted] : values) {
    std::vector<std::string> vals;
    for (const auto &value : sorted)
      vals.push_back(value.second);
    for (const auto &to : proposals(vals)) {
      bool ok = true;
      for (int v = 0; v < g.numVertices && ok; ++v) {
        auto found = vertexOf.find(renamed(parts[v], word, to));
        ok = found != vertexOf.end() &&
             (rankOf[found->second] < 0) == (rankOf[v] < 0);
        if (ok)
          perm[v] = found->second;
      }
      for (auto c = capacity.begin(); ok && c != capacity.end(); ++c) {
        int u = static_cast<int>(c->first >> 32);
        int v = static_cast<int>(c->first & 0xffffffffu);
        auto image = capacity.find(key(perm[u], perm[v]));
        ok = image != capacity.end() && image->second == c->second;
      }
      if (!ok)
        continue;
      for (int r = 0; r < n; ++r)
        orbits.join(r, rankOf[perm[g.compute[r]]]);
    }
  }
  for (int r = 0; r < n; ++r)
    rep[r] = static_cast<int>(orbits.find(r));
  return rep;
}

} // namespace topocc::analysis
