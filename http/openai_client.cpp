// OpenAiClient: the URL, the Authorization header and the answer checks of an OpenAI-compatible
// endpoint, over the one HTTP client.
#include "http/openai_client.hpp"

#include <utility>

#include "schema/untrusted_json.hpp"

namespace glassbox::http {

using base::ErrorType;
using base::make_error;
using nlohmann::json;

std::string openai_url(std::string base, std::string_view path) {
    while (!base.empty() && base.back() == '/') base.pop_back();
    if (base.size() >= 3 && base.compare(base.size() - 3, 3, "/v1") == 0)
        base.resize(base.size() - 3);
    return base + "/v1/" + std::string(path);
}

OpenAiClient::OpenAiClient(const std::string& base_url, std::string_view path,
                           const std::string& api_key, const HttpOptions& http)
    : url_(openai_url(base_url, path)), client_(http) {
    if (!api_key.empty()) headers_.emplace_back("Authorization", "Bearer " + api_key);
}

base::Result<HttpResponse> OpenAiClient::post_json(const json& body, const CallOptions& call) {
    return client_.post_json(url_, body, headers_, call);
}

base::Result<HttpResponse> OpenAiClient::post_stream(const json& body,
                                                     const ChunkCallback& on_chunk,
                                                     const CallOptions& call) {
    return client_.post_stream(url_, body, headers_, on_chunk, call);
}

base::Error OpenAiClient::malformed(const std::string& why) const {
    return make_error(ErrorType::kUpstreamError, "malformed answer from " + url_ + ": " + why);
}

base::Result<json> OpenAiClient::read_object(std::string_view body) const {
    auto read = schema::parse_untrusted_json(body);
    if (!read) return malformed(read.error().message);
    if (!read->is_object()) return malformed("not a JSON object");
    return std::move(read).value();
}

}  // namespace glassbox::http
