// Every service name on the bus, in one place: workers register under these, clients call them.
#pragma once

#include <string_view>

namespace glassbox::schema::services {

inline constexpr std::string_view kEcho = "echo";
inline constexpr std::string_view kTrace = "trace";
inline constexpr std::string_view kStore = "store";
inline constexpr std::string_view kEmbeddings = "embeddings";
inline constexpr std::string_view kLlm = "llm";
inline constexpr std::string_view kGraphRag = "graph-rag";
inline constexpr std::string_view kDocumentRag = "document-rag";
// Named ahead of the workers that will serve them (issue 15: the agent and query workers).
inline constexpr std::string_view kAgent = "agent";
inline constexpr std::string_view kQuery = "query";

}  // namespace glassbox::schema::services
