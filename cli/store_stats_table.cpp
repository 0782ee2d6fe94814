// The rows of the store-stats table.
#include "cli/store_stats_table.hpp"

#include <cstdio>
#include <iterator>
#include <map>

#include "cli/progress.hpp"

namespace glassbox::cli {
namespace {

constexpr const char* kTierNames[] = {"", "authoritative", "verified", "crowd-sourced", "inferred"};

// "1".."4" → count, 0 for a tier the store does not name.
std::string tier_count(const std::map<std::string, std::uint64_t>& per_tier, int tier) {
    const auto found = per_tier.find(std::to_string(tier));
    return with_commas(found == per_tier.end() ? 0 : found->second);
}

}  // namespace

std::string human_bytes(std::uint64_t bytes) {
    static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double value = static_cast<double>(bytes);
    std::size_t unit = 0;
    while (value >= 1024.0 && unit + 1 < std::size(kUnits)) {
        value /= 1024.0;
        ++unit;
    }
    if (unit == 0) return std::to_string(bytes) + " B";
    char text[32];
    std::snprintf(text, sizeof text, "%.1f %s", value, kUnits[unit]);
    return text;
}

std::vector<render::TableRow> store_stats_rows(const schema::StoreStats& stats) {
    std::vector<render::TableRow> rows{{"Collection " + stats.collection, {}},
                                       {"", {"facts", "documents", "chunks"}}};
    for (int tier = 1; tier <= 4; ++tier) {
        rows.push_back(
            {"tier " + std::to_string(tier) + " " + kTierNames[tier],
             {tier_count(stats.facts_per_tier, tier), tier_count(stats.documents_per_tier, tier),
              tier_count(stats.chunks_per_tier, tier)}});
    }
    rows.push_back(
        {"total",
         {with_commas(stats.quads), with_commas(stats.documents), with_commas(stats.chunks)}});
    rows.push_back({"Graph", {}});
    rows.push_back({"subjects", {with_commas(stats.subjects)}});
    rows.push_back({"predicates", {with_commas(stats.predicates)}});
    rows.push_back({"objects", {with_commas(stats.objects)}});
    rows.push_back({"terms", {with_commas(stats.terms)}});
    rows.push_back({"named graphs", {with_commas(stats.graphs)}});
    rows.push_back({"sources", {with_commas(stats.sources)}});
    rows.push_back({"Vectors", {}});
    rows.push_back({"entity vectors", {with_commas(stats.entity_vectors)}});
    rows.push_back({"chunk vectors", {with_commas(stats.chunk_vectors)}});
    if (!stats.model.empty())
        rows.push_back(
            {"embedding model", {stats.model + " (dim " + std::to_string(stats.dim) + ")"}});
    rows.push_back({"Storage", {}});
    rows.push_back(
        {"bytes on disk",
         {with_commas(stats.bytes_on_disk) + " (" + human_bytes(stats.bytes_on_disk) + ")"}});
    rows.push_back({"last loaded", {stats.last_loaded.empty() ? "-" : stats.last_loaded}});
    rows.push_back({"Freshness", {}});
    rows.push_back({"max age", {stats.max_age.empty() ? "-" : stats.max_age}});
    rows.push_back(
        {"stale sources", {stats.max_age.empty() ? "-" : with_commas(stats.stale_sources)}});
    return rows;
}

}  // namespace glassbox::cli
