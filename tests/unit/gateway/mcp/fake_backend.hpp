// A scripted MCP Backend for the unit tests: records each call, answers what a test set.
#pragma once

#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gateway/mcp/backend.hpp"

namespace glassbox::gateway::mcp::testing {

class FakeBackend : public Backend {
public:
    struct Call {
        std::string what;
        nlohmann::json args;
    };

    // Reports `steps` as progress, runs `during` (a test's way to act while the call is in
    // flight: cancel it, delete its session), and answers Cancelled when it was cancelled.
    base::Result<nlohmann::json> resolve_intent(const nlohmann::json& args,
                                                RunControl& control) override {
        for (const auto& step : steps) control.progress(step);
        if (during) during(control);
        if (control.cancelled()) {
            calls.push_back({"resolve_intent", args});
            saw_cancel = true;
            return base::make_error(base::ErrorType::kCancelled, "cancelled");
        }
        return answer("resolve_intent", args, answer_);
    }
    base::Result<nlohmann::json> search_graph(const nlohmann::json& args) override {
        return answer("search_graph", args, search_);
    }
    base::Result<nlohmann::json> trace_show(const std::string& id) override {
        return answer("trace_show", id, show_);
    }
    base::Result<nlohmann::json> trace_list(const nlohmann::json& filters) override {
        return answer("trace_list", filters, list_);
    }
    base::Result<nlohmann::json> eval_list(std::int64_t limit, std::int64_t offset) override {
        return answer("eval_list", {{"limit", limit}, {"offset", offset}}, evals_);
    }
    base::Result<nlohmann::json> eval_show(const std::string& name) override {
        return answer("eval_show", name, eval_);
    }

    std::vector<Call> calls;
    std::vector<std::string> steps;
    std::function<void(RunControl&)> during;
    bool saw_cancel = false;
    std::optional<base::Error> fail;  // every call answers this error when set
    bool throws = false;              // every call throws (a bug in an adapter)
    nlohmann::json answer_ = nlohmann::json::object();
    nlohmann::json search_ = nlohmann::json::object();
    nlohmann::json show_ = nlohmann::json::object();
    nlohmann::json list_ = nlohmann::json::object();
    nlohmann::json evals_ = nlohmann::json::object();
    nlohmann::json eval_ = nlohmann::json::object();

private:
    base::Result<nlohmann::json> answer(std::string what, nlohmann::json args,
                                        const nlohmann::json& reply) {
        calls.push_back({std::move(what), std::move(args)});
        if (throws) throw std::runtime_error("adapter bug");
        if (fail) return *fail;
        return reply;
    }
};

}  // namespace glassbox::gateway::mcp::testing
