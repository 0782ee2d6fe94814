// Asking the store whether a collection was ever loaded, before (or instead of) answering from it.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "base/result.hpp"
#include "workers/runtime/request_context.hpp"

namespace glassbox::runtime {

// The store's own answer for `collection`: its typed NotFound (naming the collection) when
// nothing was ever loaded into it, another error when the store could not be asked, else
// success. One `triples` lookup of at most one triple: the same per-collection check every store
// query op makes, at the least cost.
base::Result<void> check_collection(RequestContext& context, std::string_view store_service,
                                    const std::string& collection,
                                    std::chrono::milliseconds timeout);

}  // namespace glassbox::runtime
