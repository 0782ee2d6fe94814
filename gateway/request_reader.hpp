// Reads one HTTP/1.1 request from the bytes a client sends, strictly (RFC 9110, RFC 9112), with
// bounded head and body, and hands on a canonical copy for the router (docs/http.md §4).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace glassbox::gateway {

// What one request may be. Beyond a bound the request is refused with the status beside it.
struct RequestLimits {
    // The request line (method, target, version): 414.
    std::size_t max_request_line = 8192;
    // One header field line: 431 (cpp-httplib, which routes the canonical copy, reads no longer
    // line either).
    std::size_t max_field_line = 8192;
    // The whole head, request line and every field line: 431.
    std::size_t max_head_bytes = std::size_t{64} * 1024;
    // Header fields in the head (and trailer fields after a chunked body): 431.
    std::size_t max_fields = 100;
    // The body, after chunked decoding: 413.
    std::size_t max_body_bytes = std::size_t{64} << 20;
};

struct HeaderField {
    std::string name;
    std::string value;
};

// A request's head as read.
struct RequestHead {
    std::string method;
    std::string target;
    std::string version;  // "HTTP/1.1" or "HTTP/1.0"
    std::vector<HeaderField> fields;
    bool chunked = false;
    std::size_t content_length = 0;  // declared (not chunked)
    bool keep_alive = true;          // HTTP/1.1 without `Connection: close`, or 1.0 with keep-alive
    bool expect_continue = false;    // `Expect: 100-continue`

    // The first field of that name (case-insensitive), or nullptr.
    const std::string* field(std::string_view name) const;
    // The target's path: up to '?', not decoded.
    std::string_view path() const;
};

// Why a request cannot be read: the status to answer and what to say (a problem's detail).
struct FramingError {
    int status = 0;
    std::string detail;
};

// Incremental and allocation-bounded: bytes are appended as they arrive and advance() goes as far
// as they allow. A request that breaks the grammar or a bound fails at the first byte that shows
// it; the caller answers error() and closes the connection (what follows cannot be framed).
// The field take() adds after a form Content-Type it replaced, saying the body is form-encoded.
inline constexpr std::string_view kFormBodyField = "X-Glassbox-Form-Body";

class RequestReader {
public:
    enum class Progress {
        kNeedMore,  // the request is not whole yet
        kComplete,  // take() it
        kFailed,    // answer error() and close
    };

    explicit RequestReader(RequestLimits limits = {});

    void append(std::string_view bytes) { buffer_.append(bytes); }
    Progress advance();

    // Any byte of the current request has arrived (blank lines before a request line do not count).
    bool started() const noexcept { return started_; }
    // The head is read; head() is valid from then on.
    bool head_done() const noexcept { return phase_ > Phase::kFields; }
    const RequestHead& head() const noexcept { return head_; }
    // Body bytes received so far (decoded).
    std::size_t body_bytes() const noexcept { return body_.size(); }
    const FramingError& error() const noexcept { return error_; }

    // The complete request as the router reads it: the request line; the fields but for
    // Transfer-Encoding, Content-Length and Expect (the body is whole, decoded, and its length
    // is given); a form Content-Type replaced by application/octet-stream (an upload's body is
    // its data, whatever the client calls it), an application/x-www-form-urlencoded one followed
    // by the field kFormBodyField (POST /api/v1/sparql takes `query=` so, SPARQL 1.1 Protocol
    // §2.1.2); then the body. A kFormBodyField the client sent is dropped.
    // The reader starts the next request with the bytes that followed (pipelining).
    std::string take();
    // Bytes of a next request are already here.
    bool has_more() const noexcept { return !buffer_.empty(); }

private:
    enum class Phase {
        kRequestLine,
        kFields,
        kChunkSize,
        kChunkData,
        kChunkEnd,
        kTrailer,
        kBody,
        kDone
    };

    Progress fail(int status, std::string detail);
    // The next line of the head (CRLF or LF ended), or false when it has not arrived yet; checks
    // the line's bound as bytes come.
    bool next_line(std::string_view& line, std::size_t bound, int status, const char* what);
    // The next CRLF-ended line of chunked framing.
    bool next_chunk_line(std::string_view& line);
    Progress read_request_line(std::string_view line);
    Progress read_field(std::string_view line, std::vector<HeaderField>& into, std::size_t& count);
    Progress end_head();
    Progress read_chunk_size(std::string_view line);
    Progress step();
    void consume(std::size_t n);

    RequestLimits limits_;
    Phase phase_ = Phase::kRequestLine;
    std::string buffer_;       // received, not yet consumed
    std::size_t scanned_ = 0;  // bytes of buffer_ already searched for the line end
    RequestHead head_;
    std::vector<HeaderField> trailers_;
    std::size_t head_bytes_ = 0;
    std::size_t field_count_ = 0;
    std::size_t blank_lines_ = 0;
    std::size_t chunk_left_ = 0;
    std::string body_;
    FramingError error_;
    bool started_ = false;
    bool failed_ = false;
};

}  // namespace glassbox::gateway
