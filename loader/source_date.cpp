// Finding a file's own date among its statements.
#include "loader/source_date.hpp"

#include <algorithm>
#include <array>
#include <string_view>
#include <utility>

#include "schema/freshness.hpp"
#include "schema/vocabulary.hpp"

namespace glassbox::loader {

namespace {

namespace vocab = schema::vocab;

// Best first: when the file was last changed, then when it was made or issued.
constexpr std::array<std::string_view, 6> kDatePredicates{
    vocab::kDctermsModified,     vocab::kSchemaDateModified, vocab::kSchemaDateModifiedHttps,
    vocab::kProvGeneratedAtTime, vocab::kDctermsDate,        vocab::kDctermsIssued};
constexpr std::size_t kNone = kDatePredicates.size();

std::size_t rank_of(std::string_view predicate) {
    const auto* found = std::find(kDatePredicates.begin(), kDatePredicates.end(), predicate);
    return static_cast<std::size_t>(found - kDatePredicates.begin());
}

}  // namespace

SourceDateFinder::SourceDateFinder(std::vector<std::string> nodes)
    : nodes_(std::move(nodes)), rank_(kNone) {}

void SourceDateFinder::scan(std::span<const schema::Triple> batch) {
    for (const auto& t : batch) {
        if (!t.s.is_iri() || !t.p.is_iri() || !t.o.is_literal()) continue;
        const std::size_t rank = rank_of(t.p.as_iri().value);
        if (rank >= rank_) continue;
        const auto& subject = t.s.as_iri().value;
        if (std::find(nodes_.begin(), nodes_.end(), subject) == nodes_.end()) continue;
        const auto& date = t.o.as_literal().value;
        if (!schema::parse_source_date_ms(date)) continue;
        date_ = date;
        rank_ = rank;
    }
}

}  // namespace glassbox::loader
