// Turns a trace store back into a schema-3 one (each triple a row of the `triples` table, as
// version 3 wrote them) for the migration tests.
#pragma once

#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "storage/sqlite_database.hpp"
#include "workers/trace_collector/triple_blob.hpp"

namespace glassbox::trace::testing {

// Version 3's tables of events and triples, as its schema created them.
inline constexpr const char* kSchema3Tables = R"sql(
CREATE TABLE events_v3(
  session INTEGER NOT NULL,
  seq INTEGER NOT NULL,
  explain_id TEXT,
  state TEXT NOT NULL,
  received INTEGER NOT NULL,
  delivery_id INTEGER,
  PRIMARY KEY(session, seq)) WITHOUT ROWID;
CREATE TABLE triples(
  session INTEGER NOT NULL,
  seq INTEGER NOT NULL,
  ord INTEGER NOT NULL,
  triple TEXT NOT NULL,
  text_id INTEGER,
  PRIMARY KEY(session, seq, ord)) WITHOUT ROWID;
)sql";

// The store at `path` (closed) with its events' triples moved to version 3's rows, its events
// in version 3's table and the version set back to 3.
inline void downgrade_to_schema3(const std::filesystem::path& path) {
    auto opened = storage::Database::open(path, storage::OpenOptions{});
    ASSERT_TRUE(opened.ok()) << opened.error().describe();
    storage::Database& db = **opened;
    ASSERT_TRUE(db.exec(kSchema3Tables).ok());
    {
        auto events = db.prepare_once("SELECT session, seq, triple_count, triples FROM events");
        auto insert = db.prepare_once(
            "INSERT INTO triples(session, seq, ord, triple, text_id) VALUES(?1, ?2, ?3, ?4, ?5)");
        ASSERT_TRUE(events.ok() && insert.ok());
        TripleBlobReader reader;
        auto read = events->each([&](const storage::Row& row) -> base::Result<void> {
            auto records = reader.decode(row.blob(3), row.int64(2));
            if (!records) return records.error();
            std::int64_t ord = 0;
            for (const auto& record : *records) {
                insert->bind(1, row.int64(0))
                    .bind(2, row.int64(1))
                    .bind(3, ord++)
                    .bind(4, record.triple)
                    .bind(5, record.text_id);
                auto r = insert->run();
                insert->reset();
                if (!r) return r;
            }
            return {};
        });
        ASSERT_TRUE(read.ok()) << read.error().describe();
    }
    auto dropped = db.exec(
        "INSERT INTO events_v3 SELECT session, seq, explain_id, state, received, delivery_id "
        "FROM events; DROP TABLE events; ALTER TABLE events_v3 RENAME TO events; "
        "DROP INDEX texts_last_used; ALTER TABLE texts DROP COLUMN last_used; "
        "ALTER TABLE sessions DROP COLUMN pinned; UPDATE meta SET value = '3' WHERE key = "
        "'schema';");
    ASSERT_TRUE(dropped.ok()) << dropped.error().describe();
}

}  // namespace glassbox::trace::testing
