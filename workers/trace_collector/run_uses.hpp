// The usage index of the trace store (issue 36, docs/traces.md "Which answers rest on what"): what
// each run used, gathered from its explain messages during the ingest scan, written in the
// batch's transaction, and the `list` filters that read it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/result.hpp"
#include "schema/term.hpp"
#include "storage/sql.hpp"
#include "workers/trace_collector/explain_scan.hpp"
#include "workers/trace_collector/trace_store.hpp"

namespace glassbox::trace::detail {

// What a use is, one letter in run_uses.kind.
namespace use_kind {
inline constexpr char kFact = 'f';        // a selected fact: "S P O" in N-Triples terms
inline constexpr char kDocument = 'd';    // a source document (gb:sourceDocument)
inline constexpr char kChunk = 'c';       // a chunk (gb:sourceChunk)
inline constexpr char kCollection = 'l';  // the knowledge collection asked (gb:collection)
inline constexpr char kModel = 'm';       // a model name (gb:model)
inline constexpr char kTool = 't';        // an agent's tool (gb:action)
inline constexpr char kEntity = 'e';      // a used fact's subject or object IRI, a seed entity
}  // namespace use_kind

// Values longer than this are not indexed (a fact with a long literal object).
inline constexpr std::size_t kMaxUseValueBytes = 2048;

// run_uses.key of (kind, value): FNV-1a 64 of the kind letter and the value, as a signed integer.
std::int64_t use_key(char kind, std::string_view value);

// A fact as the index holds it: its three terms in N-Triples, one space between.
std::string fact_value(const schema::Term& s, const schema::Term& p, const schema::Term& o);

// `text` ("S P O": three N-Triples terms, or bare IRIs with the object an IRI or a plain literal
// of the rest) as fact_value writes it; InvalidRequest saying what is wrong otherwise.
base::Result<std::string> parse_fact(std::string_view text);

// What one run used, as a batch has seen it.
struct RunUses {
    std::set<std::pair<char, std::string>> uses;
    std::string text;  // its question and answer words seen in the batch, for `list --text`
};

// Gathers what one event's triples say the run used. Facts are the rdf:Statement nodes a step
// links with gb:selectedEdge (never the merely explored edges); a statement's parts are taken
// from the triples after that link (the order the explain builder writes them in).
class UseScan {
public:
    void see(const ScannedTriple& t, std::string& scratch);
    // Moves the event's uses into `out` and starts over.
    void finish(RunUses& out);

private:
    struct Parts {
        std::optional<schema::Term> s, p, o;
    };
    std::set<std::string> selected_;  // statement nodes under gb:selectedEdge
    std::set<std::string> chosen_;    // nodes whose sources were used (edges, chunks)
    std::unordered_map<std::string, Parts> parts_;
    std::set<std::pair<char, std::string>> uses_;
    std::string text_;
};

// Writes the batch's uses of each run (`runs`: session row id → uses) as one run_uses row for
// the run and one for its top-level run (the parent chain as stored), and its text for
// `list --text`. In the batch's write transaction, after its session rows.
base::Result<void> write_run_uses(storage::sql::Connection& db,
                                  const std::map<std::int64_t, RunUses>& runs);

// The `list` conditions on sessions.id for the query's usage filters, each with its bindings
// (the caller numbers the parameters). The index holds 64-bit hashes, not the values: a false
// match needs two uses' hashes to collide (about 1 in 10^19 for a given pair).
struct UseCondition {
    std::string sql;  // with "{}" where each binding's parameter goes, in order
    std::vector<std::variant<std::int64_t, std::string>> bindings;
};
base::Result<std::vector<UseCondition>> use_conditions(storage::sql::Connection& db,
                                                       const ListQuery& query);
// The condition for one use: the sessions.id of the runs that used (kind, value), with one binding.
UseCondition use_condition(char kind, const std::string& value, bool postgres);

// When session row `session` is a complete knowledge change (a `store` run with
// `Q a gb:KnowledgeChange`), records an invalidation for every stored top-level run that used a
// fact or source it removed (run_invalidations.cpp). In the batch's write transaction.
base::Result<void> record_invalidations(storage::sql::Connection& db, std::int64_t session);

// The invalidations of session row `session`, oldest first, as schema::TraceInvalidation
// encodes them.
base::Result<nlohmann::json> session_invalidations(storage::sql::Connection& db,
                                                   std::int64_t session);

}  // namespace glassbox::trace::detail
