//===- support/JsonSpans.cpp - A JSON array's elements without a DOM ------===//
//
// See JsonSpans.h.
//
//===----------------------------------------------------------------------===//

#include "support/JsonSpans.h"

namespace topocc {

std::optional<JsonArraySpans> findTopLevelArray(llvm::StringRef text,
                                                llvm::StringRef key) {
  size_t i = 0, n = text.size();
  auto ws = [&] {
    while (i < n && (text[i] == ' ' || text[i] == '\n' || text[i] == '\r' ||
                     text[i] == '\t'))
      ++i;
  };
  auto skipString = [&]() -> bool { // at '"'
    for (++i; i < n; ++i) {
      if (text[i] == '\\')
        ++i;
      else if (text[i] == '"')
        return ++i, true;
    }
    return false;
  };
  auto skipValue = [&]() -> bool {
    if (i >= n)
      return false;
    if (text[i] == '"')
      return skipString();
    if (text[i] != '{' && text[i] != '[') { // a scalar
      size_t start = i;
      while (i < n && !llvm::StringRef(",}] \n\r\t").contains(text[i]))
        ++i;
      return i > start;
    }
    int depth = 0;
    while (i < n) {
      char c = text[i];
      if (c == '"') {
        if (!skipString())
          return false;
        continue;
      }
      ++i;
      if (c == '{' || c == '[')
        ++depth;
      else if ((c == '}' || c == ']') && --depth == 0)
        return true;
    }
    return false;
  };
  std::optional<JsonArraySpans> found;
  ws();
  if (i >= n || text[i] != '{')
    return std::nullopt;
  ++i;
  for (;;) {
    ws();
    if (i < n && text[i] == '}')
      break;
    if (i >= n || text[i] != '"')
      return std::nullopt;
    size_t k0 = i + 1;
    if (!skipString())
      return std::nullopt;
    llvm::StringRef name = text.slice(k0, i - 1);
    ws();
    if (i >= n || text[i] != ':')
      return std::nullopt;
    ++i;
    ws();
    if (name == key) {
      if (found || i >= n || text[i] != '[')
        return std::nullopt;
      JsonArraySpans a;
      a.begin = i++;
      ws();
      if (i < n && text[i] == ']') {
        a.end = ++i;
      } else {
        for (;;) {
          ws();
          size_t e0 = i;
          if (!skipValue())
            return std::nullopt;
          a.elements.emplace_back(e0, i);
          ws();
          if (i < n && text[i] == ',') {
            ++i;
            continue;
          }
          if (i < n && text[i] == ']') {
            a.end = ++i;
            break;
          }
          return std::nullopt;
        }
      }
      found = std::move(a);
    } else if (!skipValue()) {
      return std::nullopt;
    }
    ws();
    if (i < n && text[i] == ',') {
      ++i;
      continue;
    }
    if (i < n && text[i] == '}')
      break;
    return std::nullopt;
  }
  return found;
}

} // namespace topocc
