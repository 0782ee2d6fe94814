// The store's knowledge-change operations: `forget-source`, `forget-fact`, `forget-document`,
// and a replacing `load-commit` ("replace": true). Each is one transaction, then the vector
// indexes drop what it removed, then the change's trace goes out (change_trace.hpp).
#pragma once

#include <string_view>

#include <nlohmann/json.hpp>

#include "base/result.hpp"
#include "workers/runtime/request_context.hpp"
#include "workers/store/knowledge_base.hpp"

namespace glassbox::store {

// ForgetRequest -> KnowledgeChangeSummary (docs/knowledge.md has each body and reply).
inline constexpr std::string_view kOpForgetSource = "forget-source";
inline constexpr std::string_view kOpForgetFact = "forget-fact";
inline constexpr std::string_view kOpForgetDocument = "forget-document";

bool is_forget_op(std::string_view op) noexcept;

// A forget op's reply, or its typed error (kNotFound for what the collection does not hold).
base::Result<nlohmann::json> run_forget(runtime::RequestContext& ctx, KnowledgeBases& bases,
                                        std::string_view op, const nlohmann::json& body);

// load-commit {collection, load, replace: true, actor}: LoadTriplesResponse with "change", the
// KnowledgeChangeSummary of the replacement.
base::Result<nlohmann::json> run_replacing_commit(runtime::RequestContext& ctx,
                                                  KnowledgeBases& bases,
                                                  const std::string& collection,
                                                  const std::string& load,
                                                  const nlohmann::json& body);

}  // namespace glassbox::store
