// What the MCP server asks of glassbox: the gateway implements it over the bus (docs/mcp.md).
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "base/result.hpp"

namespace glassbox::gateway::mcp {

// What a long tool call hears and tells while it runs (docs/mcp.md §6, progress and
// cancellation). The server hands one to each call; it is used from the call's thread only.
class RunControl {
public:
    virtual ~RunControl() = default;
    // True once the call is cancelled: a notifications/cancelled for it, its session deleted,
    // or the HTTP client of its stream gone. A call polls it while it waits (at least every
    // 250 ms or so: a poll may also keep the stream alive) and, once true, stops its run and
    // returns; whatever it returns is dropped (MCP "Cancellation": no response is sent).
    virtual bool cancelled() = 0;
    // One step of the run as a short line ("query route decided: graph-rag"). Sent as
    // notifications/progress when the request asked for progress and the answer is a stream;
    // dropped otherwise.
    virtual void progress(const std::string& message) = 0;
};

// A RunControl for calls nobody can cancel or watch.
class NoRunControl final : public RunControl {
public:
    bool cancelled() override { return false; }
    void progress(const std::string&) override {}
};

// One call per tool or resource read; each answers the JSON the matching REST route answers
// (docs/http.md), or the typed error the bus gave. Called from several HTTP threads at once.
class Backend {
public:
    virtual ~Backend() = default;
    // The answer of POST /api/v1/query (docs/http.md §3: `trace_id`, `answer`, `short_answer`,
    // `citations`, `sources`, …) to `args` ({question, mode, collection, session_id}); each
    // step of the run reported to `control`, and the run cancelled on the bus (error Cancelled)
    // once `control` says so.
    virtual base::Result<nlohmann::json> resolve_intent(const nlohmann::json& args,
                                                        RunControl& control) = 0;
    // `{chunks: [...], edges: [...]}`, as POST /api/v1/search.
    virtual base::Result<nlohmann::json> search_graph(const nlohmann::json& args) = 0;
    // The trace service's `show` reply for a session URI or a unique UUID prefix.
    virtual base::Result<nlohmann::json> trace_show(const std::string& id) = 0;
    // The trace service's `list` reply for the filters of GET /api/v1/traces.
    virtual base::Result<nlohmann::json> trace_list(const nlohmann::json& filters) = 0;
    // The trace service's `eval_list` reply (`{runs, total}`: the evaluation runs `glassbox
    // eval` recorded, newest first) for a page of `limit` runs from `offset`, as GET
    // /api/v1/evals.
    virtual base::Result<nlohmann::json> eval_list(std::int64_t limit, std::int64_t offset) = 0;
    // The trace service's `eval_show` reply (`{run}`, its rows included) for the run `name`, as
    // GET /api/v1/evals/{name}; NotFound when there is none.
    virtual base::Result<nlohmann::json> eval_show(const std::string& name) = 0;
};

}  // namespace glassbox::gateway::mcp
