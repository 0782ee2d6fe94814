// One table of a knowledge collection's counts, for `glassbox graph stats` and
// `glassbox collections show` alike.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cli/render/table_render.hpp"
#include "schema/messages.hpp"

namespace glassbox::cli {

// 1536 -> "1.5 KiB": sizes as a person reads them (the exact bytes are in --json).
std::string human_bytes(std::uint64_t bytes);

// Facts, documents and chunks per data tier with their totals (facts by their best source's
// tier, documents and chunks by their document's), then the graph's shape, the vectors, the
// size on disk and when it was last loaded.
std::vector<render::TableRow> store_stats_rows(const schema::StoreStats& stats);

}  // namespace glassbox::cli
