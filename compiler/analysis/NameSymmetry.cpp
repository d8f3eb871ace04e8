//===- compiler/analysis/NameSymmetry.cpp - Symmetries proposed by names -===//

#include "compiler/analysis/NameSymmetry.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"

#include <map>
#include <set>
#include <unordered_map>

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

/// `p` with each number after one of `words` written as `to` maps it
/// (numbers `to` does not name stay).
std::string renamed(const NameParts &p, const std::vector<std::string> &words,
                    const std::map<std::string, std::string> &to) {
  std::string out;
  for (size_t i = 0; i < p.numbers.size(); ++i) {
    out += p.text[i];
    const std::string &x = p.numbers[i];
    auto it = llvm::is_contained(words, p.words[i]) ? to.find(x) : to.end();
    out += it == to.end() ? x : it->second;
  }
  out += p.text.back();
  return out;
}

/// The value maps proposed for one index with values `vals`
/// (in order): the rotation by one; with NameMoves::All also each swap of
/// two consecutive values and the reversal.
std::vector<std::map<std::string, std::string>>
proposals(const std::vector<std::string> &vals, NameMoves moves) {
  std::vector<std::map<std::string, std::string>> out;
  const size_t m = vals.size();
  if (moves == NameMoves::All)
    for (size_t i = 0; i + 1 < m; ++i)
      out.push_back({{vals[i], vals[i + 1]}, {vals[i + 1], vals[i]}});
  if (m >= 3 || (m == 2 && moves == NameMoves::Rotations)) {
    std::map<std::string, std::string> rotate, reverse;
    for (size_t i = 0; i < m; ++i) {
      rotate[vals[i]] = vals[(i + 1) % m];
      reverse[vals[i]] = vals[m - 1 - i];
    }
    out.push_back(std::move(rotate));
    if (moves == NameMoves::All)
      out.push_back(std::move(reverse));
  }
  return out;
}

} // namespace

std::vector<std::vector<int>>
namePermutations(llvm::ArrayRef<std::string> names, NameMoves moves) {
  const int n = static_cast<int>(names.size());
  std::vector<std::vector<int>> out;
  std::unordered_map<std::string, int> vertexOf;
  for (int v = 0; v < n; ++v)
    if (!vertexOf.emplace(names[v], v).second)
      return out; // names that do not tell vertices apart
  std::vector<NameParts> parts;
  parts.reserve(n);
  // Each word's values, in numeric order (then as written), and the
  // vertices whose names hold each value after the word: a renaming moves
  // only those (a swap of boxes 3 and 4 renames 2 of 32 boxes' devices).
  struct Value {
    std::vector<int> vertices;
  };
  std::map<std::string, std::map<std::pair<size_t, std::string>, Value>> values;
  for (int v = 0; v < n; ++v) {
    parts.push_back(splitName(names[v]));
    const NameParts &p = parts.back();
    for (size_t i = 0; i < p.numbers.size(); ++i) {
      std::vector<int> &at =
          values[p.words[i]][{p.numbers[i].size(), p.numbers[i]}].vertices;
      if (at.empty() || at.back() != v)
        at.push_back(v);
    }
  }
  std::vector<int> perm(n);
  for (int v = 0; v < n; ++v)
    perm[v] = v;
  // One proposal: `to` applied to the values of every word in `words`.
  auto propose = [&](const std::vector<std::string> &words,
                     const std::map<std::string, std::string> &to) {
    // The vertices this renaming touches, each once, in order.
    std::vector<int> touched;
    for (const std::string &word : words)
      for (const auto &[key, value] : values.at(word))
        if (to.count(key.second))
          touched.insert(touched.end(), value.vertices.begin(),
                         value.vertices.end());
    llvm::sort(touched);
    touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
    bool ok = true, moved = false;
    for (int v : touched) {
      auto found = vertexOf.find(renamed(parts[v], words, to));
      if (found == vertexOf.end()) {
        ok = false;
        break;
      }
      perm[v] = found->second;
      moved |= found->second != v;
    }
    if (ok && moved)
      out.push_back(perm);
    for (int v : touched)
      perm[v] = v;
  };
  // Words by their values: with NameMoves::All, words with the same
  // values also move together ("gpu3", "nic3" and "leaf3" of one rail).
  std::map<std::vector<std::string>, std::vector<std::string>> wordsByValues;
  for (const auto &[word, sorted] : values) {
    std::vector<std::string> vals;
    for (const auto &value : sorted)
      vals.push_back(value.first.second);
    for (const auto &to : proposals(vals, moves))
      propose({word}, to);
    wordsByValues[vals].push_back(word);
  }
  if (moves == NameMoves::All)
    for (const auto &[vals, words] : wordsByValues)
      if (words.size() > 1)
        for (const auto &to : proposals(vals, moves))
          propose(words, to);
  return out;
}

} // namespace topocc::analysis
