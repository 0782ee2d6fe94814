// Mounts the MCP server on a cpp-httplib server. Header-only on purpose: the MCP library stays
// free of httplib, and only what serves HTTP (the gateway, the interop stub) compiles this.
#pragma once

#include <httplib.h>

#include <cctype>
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

#include "base/ascii.hpp"
#include "gateway/mcp/server.hpp"

namespace glassbox::gateway::mcp {

// Who a request comes from, as HttpExchange::client says it.
using ClientOf = std::function<std::string(const httplib::Request&)>;

// A client known by its address only. An Authorization header proves nothing unless someone
// checks it (the gateway with --tokens does, and says so with a ClientOf of its own): counting
// clients by an unchecked token would let one client be as many as it likes.
inline std::string client_address(const httplib::Request& request) {
    return "address " + request.remote_addr;
}

// The request as the MCP server reads it: header names in lower case, repeated headers joined
// with ", " (RFC 9110 §5.3), the client as `client_of` names it.
inline HttpExchange exchange_of(const httplib::Request& request,
                                const ClientOf& client_of = client_address) {
    HttpExchange exchange;
    exchange.method = request.method;
    exchange.body = request.body;
    exchange.client = client_of(request);
    for (const auto& [name, value] : request.headers) {
        std::string key = base::ascii_lower(name);
        auto [it, fresh] = exchange.headers.emplace(key, value);
        if (!fresh) it->second += ", " + value;
    }
    return exchange;
}

inline void answer_into(const HttpAnswer& answer, httplib::Response& response) {
    response.status = answer.status;
    std::string content_type;
    for (const auto& [name, value] : answer.headers) {
        if (name == "Content-Type") {
            content_type = value;
        } else {
            response.set_header(name, value);
        }
    }
    if (answer.stream) {
        // Chunked, written as the call runs. A proxy that buffers (nginx) is asked not to.
        response.set_header("X-Accel-Buffering", "no");
        response.set_chunked_content_provider(
            content_type, [stream = answer.stream](std::size_t, httplib::DataSink& sink) {
                StreamSink out{
                    [&sink](std::string_view text) { return sink.write(text.data(), text.size()); },
                    [&sink] { return sink.is_writable(); }};
                // False (the client is gone) makes httplib close the connection.
                if (!stream(out)) return false;
                sink.done();
                return true;
            });
        return;
    }
    if (!answer.body.empty() || !content_type.empty())
        response.set_content(answer.body, content_type);
}

// Every method httplib routes on `path` goes to `handle` (an MCP Server's handle(), kept alive
// by whatever the function holds: httplib keeps it for the server's life), so that PUT and PATCH
// get the server's 405 rather than httplib's 404. `client_of` names each request's client.
inline void mount(httplib::Server& http, std::function<HttpAnswer(const HttpExchange&)> handle,
                  const std::string& path = "/mcp", ClientOf client_of = client_address) {
    auto handler = [handle = std::move(handle), client_of = std::move(client_of)](
                       const httplib::Request& request, httplib::Response& response) {
        answer_into(handle(exchange_of(request, client_of)), response);
    };
    http.Post(path, handler);
    http.Get(path, handler);
    http.Delete(path, handler);
    http.Options(path, handler);
    http.Put(path, handler);
    http.Patch(path, handler);
}

}  // namespace glassbox::gateway::mcp
