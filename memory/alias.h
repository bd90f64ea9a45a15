// The root of an alias chain (the buffer whose bytes it takes; the chain must be acyclic, as
// plan_arena checks), for any buffers that name the one whose bytes they take in
// `alias_of` (-1: none): liveness buffers and plan requests alike.
#pragma once

#include <cstddef>

namespace frugal {

template <typename Buffers>
int alias_root(const Buffers& buffers, int i) {
  while (buffers[static_cast<size_t>(i)].alias_of >= 0)
    i = buffers[static_cast<size_t>(i)].alias_of;
  return i;
}

}  // namespace frugal
