// The provider interface: one rendered template in, its completion (text or JSON) out.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.hpp"
#include "workers/llm/prompt_template.hpp"

namespace glassbox::llm {

using Clock = std::chrono::steady_clock;

// What a provider completes: the template, the caller's variables (JSON ones parsed) and the
// rendered prompt.
struct PromptInput {
    const PromptTemplate& prompt_template;
    const std::map<std::string, std::string>& variables;
    const RenderedPrompt& rendered;
};

struct Completion {
    std::string text;                    // the answer; for JSON templates the JSON text
    std::optional<nlohmann::json> json;  // JSON templates: the parsed, schema-valid answer
    // `text` is `json` as its dump() wrote it: the reply writes that text as its `json` member
    // instead of dumping the tree again.
    bool text_is_json_dump = false;
    std::string model;
    std::uint64_t in_tokens = 0;
    std::uint64_t out_tokens = 0;
};

// The cosine of `query` and each of `texts` in the `embeddings` service's vectors, in order, for
// providers that use similarity.
using SimilarityFunction = std::function<base::Result<std::vector<double>>(
    const std::string& query, const std::vector<std::string>& texts)>;

struct GenerateOptions {
    std::optional<Clock::time_point> deadline;  // never passed: the request's deadline
    std::function<bool()> cancelled;            // may be empty
    // Text templates with streaming asked for: called with each piece of the answer, in order;
    // the pieces concatenated equal Completion::text. Empty: no streaming.
    std::function<void(std::string_view)> on_text;
    SimilarityFunction similarity;  // may be empty; a provider that uses it copes with its failure
};

// Implementations are safe to call from many threads at once (the service runs N handlers).
// Errors: kInvalidRequest (a template the provider cannot answer), kUpstreamError (the model
// failed or answered badly), kTimeout, kCancelled, kServiceUnavailable (unreachable).
class Provider {
public:
    virtual ~Provider() = default;
    virtual base::Result<Completion> generate(const PromptInput& input,
                                              const GenerateOptions& options) = 0;
    // "extractive" or "openai".
    virtual std::string_view name() const = 0;
};

// Checks a JSON template's answer: nullopt and `parsed` set when it is JSON that meets the
// template's schema, else what is wrong (for the repair prompt and the error).
std::optional<std::string> check_json_answer(const PromptTemplate& prompt_template,
                                             std::string_view answer, nlohmann::json& parsed);

}  // namespace glassbox::llm
