// What the model calls of stored runs cost (docs/traces.md, "Cost"): the rows ingest writes with
// each stored event, and how show, list and stats read them back.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/result.hpp"
#include "schema/prices.hpp"
#include "storage/sql.hpp"

namespace glassbox::trace::detail {

// One node of an event that states gb:model (a step, or its reflection), with the tokens it states.
struct ModelCall {
    std::string step;
    std::string model;
    std::int64_t input_tokens = 0;
    std::int64_t output_tokens = 0;
};

// The model calls of one stored event of session row `session`.
struct EventCalls {
    std::int64_t session = 0;
    std::int64_t seq = 0;
    std::vector<ModelCall> calls;
};

// The calls of `calls` for node `step` (added when missing).
ModelCall& call_of(std::vector<ModelCall>& calls, std::string_view step);

// Writes the cost rows of a batch's stored events, priced by `prices` (a model without a price:
// cost NULL), on day day_of(received_ms). In the batch's write transaction.
base::Result<void> write_step_costs(storage::sql::Connection& db, const schema::PriceTable& prices,
                                    const std::vector<EventCalls>& events,
                                    std::int64_t received_ms);

// Sets `cost`, `currency` and `unpriced` of a session summary: its calls' and (with `subruns`)
// its sub-runs' calls. cost null when none was priced.
base::Result<void> add_run_cost(storage::sql::Connection& db, std::int64_t session, bool subruns,
                                nlohmann::json& summary);

// Each event of session row `session` with model calls: seq → its `costs` array
// (schema::StepCost).
base::Result<std::map<std::int64_t, nlohmann::json>> event_costs(storage::sql::Connection& db,
                                                                 std::int64_t session);

// The `costs` section of stats (schema::TraceCosts) in `currency`.
base::Result<nlohmann::json> cost_stats(storage::sql::Connection& db, const std::string& currency);

}  // namespace glassbox::trace::detail
