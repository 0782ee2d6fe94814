// The store's SPARQL mirror: the change numbers, the N-Triples export of a collection, and the
// thread that sends changed collections to the engine.
#include "workers/store/sparql_mirror.hpp"

#include <algorithm>
#include <exception>
#include <optional>
#include <span>
#include <utility>

#include "base/log.hpp"
#include "base/time_format.hpp"
#include "schema/sparql_graphs.hpp"
#include "schema/vocabulary.hpp"

namespace glassbox::store {

using base::ErrorType;
using base::make_error;
using base::Result;
using schema::Term;
using schema::Triple;

// ---- the numbers ---------------------------------------------------------------------------

namespace {

Result<std::int64_t> first_int64(storage::sql::Connection& db, const char* sql) {
    auto st = db.prepare(sql);
    if (!st) return st.error();
    auto value = st->first([](const storage::sql::Row& row) { return row.int64(0); });
    if (!value) return value.error();
    return value->value_or(0);
}

}  // namespace

Result<std::int64_t> collection_version(storage::sql::Connection& db) {
    return first_int64(db, "SELECT n FROM graph_version WHERE id = 1");
}

Result<std::int64_t> mirrored_version(storage::sql::Connection& db) {
    return first_int64(db, "SELECT version FROM sparql_mirrored WHERE id = 1");
}

Result<void> record_mirrored(storage::sql::Connection& db, std::int64_t version) {
    auto st = db.prepare(
        "INSERT INTO sparql_mirrored(id, version) VALUES(1, ?1) ON CONFLICT(id) DO UPDATE SET "
        "version = excluded.version");
    if (!st) return st.error();
    st->bind(1, version);
    return st->run();
}

// ---- the export ----------------------------------------------------------------------------

namespace {

// Statements appended to parts of at most `limit` statements each (0: one part).
class PartWriter {
public:
    explicit PartWriter(CollectionExport& out, std::size_t limit) : out_(out), limit_(limit) {}

    void statement(const Term& s, const Term& p, const Term& o) {
        if (out_.parts.empty() || (limit_ > 0 && in_part_ >= limit_)) {
            out_.parts.emplace_back();
            in_part_ = 0;
        }
        std::string& text = out_.parts.back();
        append_term(text, s);
        text.push_back(' ');
        schema::append_nquads_term(text, p);
        text.push_back(' ');
        append_term(text, o);
        text.append(" .\n");
        ++in_part_;
        ++out_.triples;
    }

private:
    void append_term(std::string& text, const Term& term) const {
        if (!out_.skolemized || !term.is_blank()) return schema::append_nquads_term(text, term);
        text.push_back('<');
        text.append(schema::skolem_iri(term.as_blank().id));
        text.push_back('>');
    }

    CollectionExport& out_;
    std::size_t limit_;
    std::size_t in_part_ = 0;
};

// Every fact once: the same s p o in several graphs comes in adjacent rows of the SPO order.
Result<void> export_facts(GraphStore& graph, PartWriter& writer, CollectionExport& out) {
    std::optional<Triple> last;
    return graph.match_each(schema::TriplePattern{}, 10'000, [&](std::span<const Triple> batch) {
        for (const auto& t : batch) {
            if (t.s.is_triple() || t.o.is_triple()) {
                ++out.skipped;
                continue;
            }
            if (last && last->s == t.s && last->p == t.p && last->o == t.o) continue;
            writer.statement(t.s, t.p, t.o);
            last = schema::make_triple(t.s, t.p, t.o);
        }
        return true;
    });
}

Result<void> export_sources(storage::sql::Connection& db, std::string_view collection,
                            PartWriter& writer) {
    namespace vocab = schema::vocab;
    const Term type = schema::iri(vocab::kRdfType);
    const Term entity = schema::iri(vocab::kProvEntity);
    const Term tier = schema::iri(vocab::kDataTier);
    const Term generated = schema::iri(vocab::kProvGeneratedAtTime);
    const Term dated = schema::iri(vocab::kDctermsDate);
    const Term in_collection = schema::iri(vocab::kCollection);
    const Term name = schema::literal(collection);
    std::string sql = "SELECT ";
    sql.append(kSourceColumns).append(" FROM graph_sources ORDER BY id");
    auto st = db.prepare(sql);
    if (!st) return st.error();
    return st->each([&](const storage::sql::Row& row) {
        const SourceRecord source = source_record_at(row, 0);
        const Term subject = schema::iri(source.uri);
        writer.statement(subject, type, entity);
        writer.statement(subject, tier, schema::xsd_integer(source.tier));
        if (!source.loaded_at.empty())
            writer.statement(subject, generated, schema::xsd_datetime(source.loaded_at));
        if (const auto& date = source.source_date; !date.empty()) {
            writer.statement(
                subject, dated,
                schema::typed_literal(
                    date, base::is_xsd_datetime(date) ? schema::kXsdDateTime : schema::kXsdDate));
        }
        writer.statement(subject, in_collection, name);
    });
}

}  // namespace

Result<CollectionExport> export_collection(storage::sql::Connection& db, GraphStore& graph,
                                           std::string_view collection, std::size_t part_triples) {
    CollectionExport out;
    const storage::sql::ReadScope snapshot(db);
    auto version = collection_version(db);
    if (!version) return version.error();
    out.version = *version;
    if (part_triples > 0) {
        // At most the quads (a fact in several graphs is one statement) and five per source.
        auto most = first_int64(
            db,
            "SELECT (SELECT count(*) FROM graph_quads) + 5 * (SELECT count(*) FROM graph_sources)");
        if (!most) return most.error();
        out.skolemized = static_cast<std::uint64_t>(*most) > part_triples;
    }
    PartWriter writer(out, part_triples);
    if (auto r = export_facts(graph, writer, out); !r) return r.error();
    if (auto r = export_sources(db, collection, writer); !r) return r.error();
    return out;
}

// ---- the shared status ---------------------------------------------------------------------

void SparqlMirrorStatus::notify_change() {
    // Under the lock: the mirror clears its waker (stop) before its thread goes.
    std::lock_guard lock(mutex_);
    if (waker_) waker_();
}

void SparqlMirrorStatus::set_waker(std::function<void()> waker) {
    std::lock_guard lock(mutex_);
    waker_ = std::move(waker);
}

void SparqlMirrorStatus::failed(const std::string& error) {
    std::lock_guard lock(mutex_);
    ++failures_;
    last_error_ = error;
}

void SparqlMirrorStatus::set_pending_deletes(std::uint64_t n) {
    std::lock_guard lock(mutex_);
    pending_deletes_ = n;
}

std::uint64_t SparqlMirrorStatus::failures() const {
    std::lock_guard lock(mutex_);
    return failures_;
}

std::string SparqlMirrorStatus::last_error() const {
    std::lock_guard lock(mutex_);
    return last_error_;
}

std::uint64_t SparqlMirrorStatus::pending_deletes() const {
    std::lock_guard lock(mutex_);
    return pending_deletes_;
}

Result<schema::StoreSparqlMirrorStats> sparql_mirror_stats(KnowledgeBases& bases,
                                                           const SparqlMirrorStatus* status,
                                                           std::size_t max_collections) {
    schema::StoreSparqlMirrorStats out;
    if (status == nullptr) return out;
    out.configured = true;
    out.failures = status->failures();
    out.last_error = status->last_error();
    out.pending = status->pending_deletes();
    auto names = bases.list();
    if (!names) return names.error();
    if (names->size() > max_collections) names->resize(max_collections);
    for (const auto& name : *names) {
        auto kb = bases.get(name, false);
        if (!kb) {
            if (kb.error().type == ErrorType::kNotFound) continue;  // deleted meanwhile
            return kb.error();
        }
        auto lock = (*kb)->lock();
        if (!lock) continue;
        const storage::sql::ReadScope snapshot((*kb)->db());
        schema::SparqlMirrorCollection entry{name, 0, 0};
        auto version = collection_version((*kb)->db());
        if (!version) return version.error();
        auto mirrored = mirrored_version((*kb)->db());
        if (!mirrored) return mirrored.error();
        entry.version = *version;
        entry.mirrored = *mirrored;
        if (entry.version != entry.mirrored) ++out.pending;
        out.collections.push_back(std::move(entry));
    }
    return out;
}

// ---- the thread ----------------------------------------------------------------------------

SparqlMirror::SparqlMirror(KnowledgeBases& bases, std::unique_ptr<MirrorEngine> engine,
                           SparqlMirrorConfig config, std::shared_ptr<SparqlMirrorStatus> status)
    : bases_(bases), engine_(std::move(engine)), config_(config), status_(std::move(status)) {}

SparqlMirror::~SparqlMirror() { stop(); }

void SparqlMirror::start() {
    status_->set_waker([this] { thread_.wake(); });
    thread_.start(config_.interval, [this] {
        run_once();
        return false;
    });
}

void SparqlMirror::stop() {
    status_->set_waker(nullptr);
    thread_.stop();
}

void SparqlMirror::run_once() {
    static const auto log = base::component_logger("store-sparql-mirror");
    // No exception leaves the thread: a failure is counted and the next interval retries. An
    // engine that stays down fails every interval: logged when it starts and when it ends.
    try {
        const auto pass = mirror_once();
        if (pass.sent > 0 || pass.deleted > 0)
            log->info("event=mirrored graphs_sent={} graphs_deleted={}", pass.sent, pass.deleted);
        if (pass.failed > 0 && !failing_) {
            log->warn("event=mirror_failing error=\"{}\"", status_->last_error());
        } else if (pass.failed == 0 && failing_) {
            log->info("event=mirror_recovered");
        }
        failing_ = pass.failed > 0;
    } catch (const std::exception& e) {
        status_->failed(e.what());
        log->error("event=mirror_failed error=\"{}\"", e.what());
    }
}

Result<void> SparqlMirror::find_deleted(const std::vector<std::string>& names) {
    const std::set<std::string> current(names.begin(), names.end());
    for (const auto& name : known_) {
        if (current.count(name) == 0) to_delete_.insert(schema::collection_graph_iri(name));
    }
    if (swept_) return {};
    auto graphs = engine_->collection_graphs();
    if (!graphs) return graphs.error();
    std::set<std::string> wanted;
    for (const auto& name : names) wanted.insert(schema::collection_graph_iri(name));
    for (auto& graph : *graphs) {
        if (wanted.count(graph) == 0) to_delete_.insert(std::move(graph));
    }
    swept_ = true;
    return {};
}

MirrorPass SparqlMirror::mirror_once() {
    MirrorPass pass;
    const auto fail = [&](const base::Error& error) {
        ++pass.failed;
        status_->failed(error.describe());
    };
    auto names = bases_.list();
    if (!names) {
        fail(names.error());
        return pass;
    }
    // An engine that fails is swept again when it answers: graphs of collections deleted while
    // it was down (by any process) go then.
    if (auto found = find_deleted(*names); !found) {
        fail(found.error());
        status_->set_pending_deletes(to_delete_.size());
        return pass;
    }
    known_ = std::set<std::string>(names->begin(), names->end());
    for (auto it = to_delete_.begin(); it != to_delete_.end();) {
        if (auto r = engine_->delete_graph(*it); !r) {
            fail(r.error());
            swept_ = false;
            status_->set_pending_deletes(to_delete_.size());
            return pass;
        }
        ++pass.deleted;
        it = to_delete_.erase(it);
    }
    status_->set_pending_deletes(0);
    for (const auto& name : *names) {
        auto sent = mirror_collection(name);
        if (sent) {
            pass.sent += *sent ? 1 : 0;
            continue;
        }
        fail(sent.error());
        // The engine refused this graph: the others may still go. Anything else (the engine
        // down, a timeout): the next interval tries again.
        if (sent.error().type != ErrorType::kInvalidRequest) {
            swept_ = false;
            break;
        }
    }
    return pass;
}

Result<bool> SparqlMirror::mirror_collection(const std::string& name) {
    auto kb = bases_.get(name, false);
    if (!kb) {
        if (kb.error().type == ErrorType::kNotFound) return false;  // deleted meanwhile
        return kb.error();
    }
    CollectionExport exported;
    {
        auto lock = (*kb)->lock();
        if (!lock) return false;
        auto mirrored = mirrored_version((*kb)->db());
        if (!mirrored) return mirrored.error();
        auto version = collection_version((*kb)->db());
        if (!version) return version.error();
        if (*version == *mirrored) return false;
        auto out = export_collection((*kb)->db(), (*kb)->graph(), name, config_.part_triples);
        if (!out) return out.error();
        exported = std::move(out).value();
    }
    if (auto r = send(schema::collection_graph_iri(name), exported); !r) return r.error();
    // Only after the engine took it; a collection deleted meanwhile has its graph deleted next.
    auto lock = (*kb)->lock();
    if (!lock) return true;
    if (auto r = record_mirrored((*kb)->db(), exported.version); !r) return r.error();
    return true;
}

Result<void> SparqlMirror::send(const std::string& graph, const CollectionExport& exported) {
    if (exported.parts.empty()) return engine_->delete_graph(graph);
    if (auto r = engine_->put_graph(graph, exported.parts.front()); !r) return r;
    for (std::size_t i = 1; i < exported.parts.size(); ++i) {
        if (auto r = engine_->post_graph(graph, exported.parts[i]); !r) return r;
    }
    return {};
}

}  // namespace glassbox::store
