// The store's SPARQL mirror (docs/knowledge.md, "The SPARQL mirror"): each collection as one named
// graph of a SPARQL engine, sent again whenever the collection's change number moves, and
// deleted with the collection; the number last sent is kept in the collection, so a restart or an
// engine that was down only sends what changed.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "base/periodic_thread.hpp"
#include "base/result.hpp"
#include "schema/messages.hpp"
#include "storage/sql.hpp"
#include "workers/store/graph_store.hpp"
#include "workers/store/knowledge_base.hpp"

namespace glassbox::store {

// ---- the numbers, in the collection's own tables -------------------------------------------

// The collection's change number: graph_version, moved by note_graph_change in every write
// transaction that changes what the collection states (a load's commit, an insert, a source
// registered, a replace, a forget). Reads never move it.
base::Result<std::int64_t> collection_version(storage::sql::Connection& db);
// The change number the collection's graph was last sent at (0: never).
base::Result<std::int64_t> mirrored_version(storage::sql::Connection& db);
// Records that the graph holds the collection as of `version` (its own transaction).
base::Result<void> record_mirrored(storage::sql::Connection& db, std::int64_t version);

// ---- the export ------------------------------------------------------------------------------

// A collection as N-Triples: every fact once (the graphs of fact graphs dropped: the engine's
// graph is the collection), its labels with them (they are rdfs:label facts), and each source
// `<source> a prov:Entity; gb:dataTier N; prov:generatedAtTime "loaded"^^xsd:dateTime;
// dcterms:date "its own date" (when known); gb:collection "<name>"`.
struct CollectionExport {
    std::int64_t version = 0;        // the change number of the snapshot exported
    std::vector<std::string> parts;  // N-Triples, at most part_triples statements each
    std::uint64_t triples = 0;       // statements in all parts
    // Facts with a quoted triple (RDF 1.2): left out, since SPARQL 1.1 engines refuse them.
    std::uint64_t skipped = 0;
    // Whether blank nodes were written as schema::skolem_iri (a collection that may need more
    // than one part: each request scopes its blank nodes, which would split one node in two).
    bool skolemized = false;
};

// Reads one snapshot of the collection (the caller holds its lock). part_triples 0: one part.
// A collection that states nothing gives no part.
base::Result<CollectionExport> export_collection(storage::sql::Connection& db, GraphStore& graph,
                                                 std::string_view collection,
                                                 std::size_t part_triples = 0);

// ---- the engine ------------------------------------------------------------------------------

// Where the mirror writes: the SPARQL 1.1 Graph Store Protocol of http::SparqlClient in the store
// worker (cli/store_worker_command.cpp), a fake in tests. Errors are the client's.
class MirrorEngine {
public:
    virtual ~MirrorEngine() = default;
    virtual base::Result<void> put_graph(std::string_view graph, std::string_view ntriples) = 0;
    virtual base::Result<void> post_graph(std::string_view graph, std::string_view ntriples) = 0;
    // A graph that does not exist is deleted already.
    virtual base::Result<void> delete_graph(std::string_view graph) = 0;
    // The names of the collection graphs the engine holds (schema::kCollectionGraphPrefix), so
    // graphs of collections deleted while no mirror ran can be found.
    virtual base::Result<std::vector<std::string>> collection_graphs() = 0;
};

// What the mirror thread and the store service share: the wake-up after a write, and the
// failure counters `stats` shows. Any thread.
class SparqlMirrorStatus {
public:
    // A write in this process: the mirror looks at once instead of at its next interval.
    void notify_change();
    // What notify_change() calls while a mirror runs (the mirror sets it; null: none runs).
    void set_waker(std::function<void()> waker);

    void failed(const std::string& error);
    void set_pending_deletes(std::uint64_t n);
    std::uint64_t failures() const;
    std::string last_error() const;
    std::uint64_t pending_deletes() const;

private:
    mutable std::mutex mutex_;
    std::function<void()> waker_;
    std::uint64_t failures_ = 0;
    std::string last_error_;
    std::uint64_t pending_deletes_ = 0;
};

// The `sparql_mirror` part of `stats`: each collection's numbers (read under its lock; do not
// hold another collection's lock) and the status's counters. `status` null: not configured.
base::Result<schema::StoreSparqlMirrorStats> sparql_mirror_stats(KnowledgeBases& bases,
                                                                 const SparqlMirrorStatus* status,
                                                                 std::size_t max_collections);

struct SparqlMirrorConfig {
    // sparql.mirror_interval_ms: how often the thread looks for changes when nothing wakes it,
    // and retries after a failure.
    std::chrono::milliseconds interval{1'000};
    // Statements per request: the first part is PUT, the rest POSTed (blank nodes then sent as
    // skolem IRIs). 0: the whole graph in one PUT. Virtuoso 7.2 took one PUT of 100,000 short
    // statements (7 MB) in 2.4 s and of 500,000 in 13 s: parts keep each request well inside
    // sparql.timeout_ms.
    std::size_t part_triples = 100'000;
};

// What one pass did.
struct MirrorPass {
    std::size_t sent = 0;     // graphs written (PUT)
    std::size_t deleted = 0;  // graphs deleted
    std::size_t failed = 0;   // sends and deletes that failed (the pass stops at an engine down)
};

// The thread that keeps the engine's collection graphs equal to the collections of `bases`.
class SparqlMirror {
public:
    SparqlMirror(KnowledgeBases& bases, std::unique_ptr<MirrorEngine> engine,
                 SparqlMirrorConfig config, std::shared_ptr<SparqlMirrorStatus> status);
    ~SparqlMirror();
    SparqlMirror(const SparqlMirror&) = delete;
    SparqlMirror& operator=(const SparqlMirror&) = delete;

    // The first pass runs at once, then one per interval or write.
    void start();
    // Wakes the thread and joins it (a send in progress finishes first).
    void stop();
    // One pass as the thread runs it: the graphs of deleted collections deleted, then every
    // collection whose number is not the one mirrored sent. For tests and the thread.
    MirrorPass mirror_once();

private:
    // One pass of the thread, logged when the engine starts or stops failing. Never throws.
    void run_once();
    // Graph names to delete: the collections gone since the last pass and, once after a start
    // or an engine failure, every collection graph in the engine with no collection.
    base::Result<void> find_deleted(const std::vector<std::string>& names);
    base::Result<bool> mirror_collection(const std::string& name);
    base::Result<void> send(const std::string& graph, const CollectionExport& exported);

    KnowledgeBases& bases_;
    std::unique_ptr<MirrorEngine> engine_;
    SparqlMirrorConfig config_;
    std::shared_ptr<SparqlMirrorStatus> status_;
    std::set<std::string> known_;      // the collections of the last pass
    std::set<std::string> to_delete_;  // graph names
    bool swept_ = false;
    bool failing_ = false;  // the last pass failed (the thread's own)
    base::PeriodicThread thread_;
};

}  // namespace glassbox::store
