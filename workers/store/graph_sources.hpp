// Where the graph's facts come from: source records (files, documents, chunks) with their data
// tier, kept in graph_sources and linked to each fact they provided.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.hpp"
#include "schema/messages.hpp"
#include "storage/sql.hpp"

namespace glassbox::store {

// What a source is: a whole file, a document, or one chunk of a document.
enum class SourceKind { kFile = 0, kDocument = 1, kChunk = 2 };

std::string_view to_string(SourceKind kind) noexcept;

struct SourceRecord {
    std::string uri;  // file:///…, a document's URI or a chunk's URI; the identity
    SourceKind kind = SourceKind::kFile;
    std::string document_uri;  // the document a chunk belongs to (required for kChunk)
    std::uint32_t tier = schema::kDefaultTier;  // 1 authoritative … 4 inferred
    std::string loaded_at;                      // xsd:dateTime lexical form; may be empty
    std::string media_type;                     // may be empty
    // The source's own date (xsd:date or xsd:dateTime), as the source says; empty: not known.
    std::string source_date{};
    bool operator==(const SourceRecord&) const = default;
};

// kInvalidRequest for an empty uri, a tier outside 1..4, a chunk without a document_uri, or a
// source_date that is neither an xsd:date nor an xsd:dateTime.
base::Result<void> check_source(const SourceRecord& source);

// Checks the record, then inserts it or updates the row with its uri; returns the source's id.
base::Result<std::int64_t> store_source(storage::sql::Connection& db, const SourceRecord& source);

// A source record from seven columns of a row, from `first` on: uri, kind, document_uri, tier,
// loaded_at, media_type, source_date (kSourceColumns: every reader selects them in that order).
SourceRecord source_record_at(const storage::sql::Row& row, int first);
inline constexpr std::string_view kSourceColumns =
    "uri, kind, document_uri, tier, loaded_at, media_type, source_date";

// The first source of a stored fact (its graph_quads.src), or std::nullopt when it is not stored.
base::Result<std::optional<std::int64_t>> first_source_of(storage::sql::Connection& db,
                                                          std::int64_t s, std::int64_t p,
                                                          std::int64_t o, std::int64_t g);

// Records a further source of a stored fact in graph_fact_sources (a repeat is ignored).
base::Result<void> link_fact_source(storage::sql::Connection& db, std::int64_t s, std::int64_t p,
                                    std::int64_t o, std::int64_t g, std::int64_t source);

// The records with these ids (an unknown id is skipped), best tier first, then by uri.
base::Result<std::vector<SourceRecord>> read_sources(storage::sql::Connection& db,
                                                     std::span<const std::int64_t> ids);

}  // namespace glassbox::store
