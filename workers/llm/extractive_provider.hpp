// The extractive provider: answers the five built-in templates with ExtractiveModel.
#pragma once

#include "workers/llm/extractive_model.hpp"
#include "workers/llm/provider.hpp"

namespace glassbox::llm {

// Reports model "glassbox-extractive-v1"; in_tokens/out_tokens are whitespace-separated word
// counts of the rendered prompt and of the answer. The template's prompt text is not read (a
// user override changes nothing here but the token count); its variables are. Streams text
// answers one sentence per piece. kInvalidRequest for a template other than the five built-in
// names. kg-edge-scoring asks `embed` for "question" and each "s p o" and blends the cosines
// in; when that fails it scores lexically only (logged once a minute at most).
class ExtractiveProvider final : public Provider {
public:
    base::Result<Completion> generate(const PromptInput& input,
                                        const GenerateOptions& options) override;
    std::string_view name() const override { return "extractive"; }

    const ExtractiveModel& model() const noexcept { return model_; }

private:
    ExtractiveModel model_;
};

}  // namespace glassbox::llm
