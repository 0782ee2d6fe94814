// The extractive provider: answers the built-in templates with the offline reasoner
// (reasoner/reasoner.hpp: its ExtractiveModel, and its planner for agent-react).
#pragma once

#include "reasoner/reasoner.hpp"
#include "workers/llm/provider.hpp"

namespace glassbox::llm {

// Reports model "glassbox-extractive-v1"; in_tokens/out_tokens are whitespace-separated word
// counts of the rendered prompt and of the answer. The template's prompt text is not read (a
// user override changes nothing here but the token count); its variables are. Streams text
// answers one sentence per piece. kInvalidRequest for a template other than the six it answers
// (agent-completion included: it needs a model). kg-edge-scoring asks `similarity` for "question"
// against each "s p o" and blends the cosines in; when that fails it scores lexically only (logged
// once a minute at most). Bounded input: at most kMaxEdges edges (kg-edge-scoring,
// kg-edge-reasoning, kg-synthesis) and kMaxConcepts concepts, else kInvalidRequest naming the
// bound; the graph-rag pipeline sends at most 1,000 edges. Scoring and reasoning stop with
// kCancelled once the request is cancelled or its deadline passes (GenerateOptions::cancelled,
// deadline). With a `delay`, each answer waits that long first (a stand-in for a model's latency:
// demos, tests of live views and of cancellation), checking every 10 ms for cancellation
// (kCancelled) and the deadline (kTimeout).
class ExtractiveProvider final : public Provider {
public:
    static constexpr std::size_t kMaxEdges = 20'000;
    static constexpr std::size_t kMaxConcepts = 100;

    explicit ExtractiveProvider(std::chrono::milliseconds delay = std::chrono::milliseconds{0})
        : delay_(delay) {}

    base::Result<Completion> generate(const PromptInput& input,
                                      const GenerateOptions& options) override;
    std::string_view name() const override { return "extractive"; }

    const reasoner::ExtractiveModel& model() const noexcept { return model_; }

private:
    base::Result<void> wait_delay(const GenerateOptions& options) const;

    reasoner::ExtractiveModel model_;
    std::chrono::milliseconds delay_;
};

}  // namespace glassbox::llm
