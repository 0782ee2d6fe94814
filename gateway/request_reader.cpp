// The strict HTTP/1.1 request reader (request_reader.hpp): RFC 9112 §2-§7 framing, RFC 9110 §5
// field syntax, bounded everywhere.
#include "gateway/request_reader.hpp"

#include <algorithm>
#include <cctype>

#include "base/ascii.hpp"

namespace glassbox::gateway {

namespace {

// Empty lines a client may send before a request line (RFC 9112 §2.2: at least one is ignored).
constexpr std::size_t kMaxBlankLines = 4;
// A chunk-size line with its extensions (RFC 9112 §7.1.1), which are read and ignored.
constexpr std::size_t kMaxChunkLine = 1024;
// Hex digits of a chunk size: 15 keep it below 2^60, far above any body bound.
constexpr std::size_t kMaxChunkDigits = 15;

bool starts_with_ci(std::string_view s, std::string_view prefix) {
    return s.size() >= prefix.size() && base::ascii_iequals(s.substr(0, prefix.size()), prefix);
}

// RFC 9110 §5.6.2 tchar.
bool is_tchar(char c) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u)) return true;
    return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

bool is_token(std::string_view s) {
    return !s.empty() && std::all_of(s.begin(), s.end(), is_tchar);
}

// RFC 9110 §5.5 field-value bytes: VCHAR, obs-text, SP, HTAB. NUL, CR, LF and other controls
// are refused (§5.5: "a recipient ... MUST either reject the message").
bool is_field_value_byte(char c) {
    const auto u = static_cast<unsigned char>(c);
    return u == '\t' || u == ' ' || (u > 0x20 && u != 0x7f);
}

std::string_view trim_ows(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
}

// The comma-separated members of a field value, trimmed, empty ones skipped (RFC 9110 §5.6.1).
std::vector<std::string_view> list_members(std::string_view value) {
    std::vector<std::string_view> members;
    while (!value.empty()) {
        const auto comma = value.find(',');
        const auto member = trim_ows(value.substr(0, comma));
        if (!member.empty()) members.push_back(member);
        if (comma == std::string_view::npos) break;
        value.remove_prefix(comma + 1);
    }
    return members;
}

bool has_token(std::string_view value, std::string_view token) {
    const auto members = list_members(value);
    return std::any_of(members.begin(), members.end(),
                       [token](std::string_view m) { return base::ascii_iequals(m, token); });
}

// A target as RFC 9112 §3.2 allows it here: origin-form ("/…"), or "*" for OPTIONS; visible
// ASCII only.
bool usable_target(std::string_view method, std::string_view target) {
    if (target.empty()) return false;
    if (!std::all_of(target.begin(), target.end(), [](char c) { return c > 0x20 && c < 0x7f; }))
        return false;
    return target.front() == '/' || (target == "*" && method == "OPTIONS");
}

bool is_form_type(std::string_view content_type) {
    return starts_with_ci(trim_ows(content_type), "application/x-www-form-urlencoded") ||
           starts_with_ci(trim_ows(content_type), "multipart/");
}

}  // namespace

const std::string* RequestHead::field(std::string_view name) const {
    for (const auto& f : fields)
        if (base::ascii_iequals(f.name, name)) return &f.value;
    return nullptr;
}

std::string_view RequestHead::path() const {
    const std::string_view t = target;
    return t.substr(0, t.find('?'));
}

RequestReader::RequestReader(RequestLimits limits) : limits_(limits) {}

RequestReader::Progress RequestReader::fail(int status, std::string detail) {
    failed_ = true;
    error_ = FramingError{status, std::move(detail)};
    buffer_.clear();
    body_.clear();
    return Progress::kFailed;
}

void RequestReader::consume(std::size_t n) {
    buffer_.erase(0, n);
    scanned_ = 0;
}

bool RequestReader::next_line(std::string_view& line, std::size_t bound, int status,
                              const char* what) {
    const auto lf = buffer_.find('\n', scanned_);
    if (lf == std::string::npos) {
        scanned_ = buffer_.size();
        if (buffer_.size() > bound)
            fail(status, std::string(what) + " is longer than " + std::to_string(bound) + " bytes");
        else if (head_bytes_ + buffer_.size() > limits_.max_head_bytes)
            fail(431, "the request head is larger than " + std::to_string(limits_.max_head_bytes) +
                          " bytes");
        return false;
    }
    std::size_t end = lf;
    if (end > 0 && buffer_[end - 1] == '\r') --end;
    if (end > bound) {
        fail(status, std::string(what) + " is longer than " + std::to_string(bound) + " bytes");
        return false;
    }
    line = std::string_view(buffer_).substr(0, end);
    if (line.find('\r') != std::string_view::npos) {
        fail(400, std::string(what) + " holds a CR that does not end it");
        return false;
    }
    head_bytes_ += lf + 1;
    if (head_bytes_ > limits_.max_head_bytes) {
        fail(431, "the request head is larger than " + std::to_string(limits_.max_head_bytes) +
                      " bytes");
        return false;
    }
    return true;
}

bool RequestReader::next_chunk_line(std::string_view& line) {
    const auto crlf = buffer_.find("\r\n", scanned_ > 0 ? scanned_ - 1 : 0);
    if (crlf == std::string::npos) {
        scanned_ = buffer_.size();
        if (buffer_.size() > kMaxChunkLine)
            fail(400,
                 "a chunk-size line is longer than " + std::to_string(kMaxChunkLine) + " bytes");
        return false;
    }
    line = std::string_view(buffer_).substr(0, crlf);
    if (line.size() > kMaxChunkLine) {
        fail(400, "a chunk-size line is longer than " + std::to_string(kMaxChunkLine) + " bytes");
        return false;
    }
    if (line.find_first_of("\r\n") != std::string_view::npos) {
        fail(400, "a chunk-size line must end with CRLF");
        return false;
    }
    return true;
}

RequestReader::Progress RequestReader::read_request_line(std::string_view line) {
    const auto first = line.find(' ');
    const auto last = line.rfind(' ');
    if (first == std::string_view::npos || first == last)
        return fail(400, "the request line is not METHOD SP TARGET SP VERSION");
    head_.method = std::string(line.substr(0, first));
    head_.target = std::string(line.substr(first + 1, last - first - 1));
    head_.version = std::string(line.substr(last + 1));
    if (!is_token(head_.method)) return fail(400, "the request method is not a token");
    if (!usable_target(head_.method, head_.target))
        return fail(400, "the request target is not an absolute path of visible ASCII characters");
    if (head_.version != "HTTP/1.1" && head_.version != "HTTP/1.0") {
        const bool http = head_.version.size() == 8 && head_.version.starts_with("HTTP/") &&
                          std::isdigit(static_cast<unsigned char>(head_.version[5])) &&
                          head_.version[6] == '.' &&
                          std::isdigit(static_cast<unsigned char>(head_.version[7]));
        if (http) return fail(505, "only HTTP/1.1 and HTTP/1.0 are served, not " + head_.version);
        return fail(400, "the request line's version is not HTTP/1.1");
    }
    return Progress::kNeedMore;
}

RequestReader::Progress RequestReader::read_field(std::string_view line,
                                                  std::vector<HeaderField>& into,
                                                  std::size_t& count) {
    // RFC 9112 §5.2: obs-fold outside message/http is rejected with 400.
    if (line.front() == ' ' || line.front() == '\t')
        return fail(400,
                    "a header line begins with whitespace (obsolete line folding is not accepted)");
    const auto colon = line.find(':');
    if (colon == std::string_view::npos) return fail(400, "a header line has no colon");
    const auto name = line.substr(0, colon);
    // RFC 9112 §5.1: no whitespace between the field name and the colon.
    if (!is_token(name))
        return fail(400,
                    "a header name is not a token (\"" + std::string(name.substr(0, 64)) + "\")");
    const auto value = trim_ows(line.substr(colon + 1));
    if (!std::all_of(value.begin(), value.end(), is_field_value_byte))
        return fail(400, "the header " + std::string(name) + " holds a control character");
    if (++count > limits_.max_fields)
        return fail(431, "the request has more than " + std::to_string(limits_.max_fields) +
                             " header fields");
    into.push_back(HeaderField{std::string(name), std::string(value)});
    return Progress::kNeedMore;
}

// RFC 9112 §6: the body's framing from Transfer-Encoding and Content-Length.
RequestReader::Progress RequestReader::end_head() {
    std::string transfer_coding;
    bool has_length = false;
    std::size_t length = 0;
    std::size_t hosts = 0;
    for (const auto& f : head_.fields) {
        if (base::ascii_iequals(f.name, "Host")) ++hosts;
        if (base::ascii_iequals(f.name, "Transfer-Encoding")) {
            if (!transfer_coding.empty()) transfer_coding += ',';
            transfer_coding += f.value;
            if (trim_ows(f.value).empty()) return fail(400, "Transfer-Encoding is empty");
        } else if (base::ascii_iequals(f.name, "Content-Length")) {
            for (const auto member : list_members(f.value)) {
                if (member.size() > 19 || !std::all_of(member.begin(), member.end(),
                                                       [](char c) { return c >= '0' && c <= '9'; }))
                    return fail(400, "Content-Length is not a number");
                const std::size_t n = std::stoull(std::string(member));
                // RFC 9110 §8.6: a list of identical values may be taken as one; different ones
                // not.
                if (has_length && n != length)
                    return fail(400, "the request has two different Content-Length values");
                has_length = true;
                length = n;
            }
            if (trim_ows(f.value).empty()) return fail(400, "Content-Length is empty");
        } else if (base::ascii_iequals(f.name, "Connection")) {
            if (has_token(f.value, "close")) head_.keep_alive = false;
        } else if (base::ascii_iequals(f.name, "Expect")) {
            if (!base::ascii_iequals(trim_ows(f.value), "100-continue"))
                return fail(417, "only Expect: 100-continue is understood");
            head_.expect_continue = true;
        }
    }
    // RFC 9112 §3.2: an HTTP/1.1 request without Host, or with several, is answered 400.
    if (head_.version == "HTTP/1.1" && hosts != 1)
        return fail(400, hosts == 0 ? "an HTTP/1.1 request needs a Host header"
                                    : "the request has several Host headers");
    if (head_.version == "HTTP/1.0") {
        const auto* connection = head_.field("Connection");
        head_.keep_alive = connection != nullptr && has_token(*connection, "keep-alive");
    }
    if (!transfer_coding.empty()) {
        // RFC 9112 §6.3: both is a request smuggling attempt or a broken client; the
        // connection is closed after the answer.
        if (has_length)
            return fail(400, "the request has both Transfer-Encoding and Content-Length");
        if (head_.version == "HTTP/1.0")
            return fail(400, "Transfer-Encoding is not allowed in HTTP/1.0");
        const auto codings = list_members(transfer_coding);
        const auto chunked = std::count_if(codings.begin(), codings.end(), [](std::string_view c) {
            return base::ascii_iequals(c, "chunked");
        });
        for (const auto c : codings)
            if (!base::ascii_iequals(c, "chunked"))
                return fail(501, "the transfer coding \"" + std::string(c.substr(0, 64)) +
                                     "\" is not implemented (only chunked is)");
        if (chunked != 1) return fail(400, "chunked is applied more than once");
        head_.chunked = true;
        phase_ = Phase::kChunkSize;
        return Progress::kNeedMore;
    }
    if (length > limits_.max_body_bytes)
        return fail(413, "the body (" + std::to_string(length) + " bytes) is larger than the " +
                             std::to_string(limits_.max_body_bytes) + " bytes the gateway accepts");
    head_.content_length = length;
    phase_ = Phase::kBody;
    return Progress::kNeedMore;
}

RequestReader::Progress RequestReader::read_chunk_size(std::string_view line) {
    const auto size_part = trim_ows(line.substr(0, line.find(';')));
    if (size_part.empty() || size_part.size() > kMaxChunkDigits ||
        !std::all_of(size_part.begin(), size_part.end(),
                     [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); }))
        return fail(400, "a chunk size is not a hexadecimal number");
    const std::size_t size = std::stoull(std::string(size_part), nullptr, 16);
    if (size > limits_.max_body_bytes - body_.size())
        return fail(413, "the chunked body is larger than the " +
                             std::to_string(limits_.max_body_bytes) + " bytes the gateway accepts");
    chunk_left_ = size;
    phase_ = size == 0 ? Phase::kTrailer : Phase::kChunkData;
    return Progress::kNeedMore;
}

// One step of the state machine; kNeedMore with the buffer unchanged means: wait for bytes.
RequestReader::Progress RequestReader::step() {
    std::string_view line;
    switch (phase_) {
        case Phase::kRequestLine:
            if (!buffer_.empty()) started_ = true;
            if (!next_line(line, limits_.max_request_line, 414, "the request line")) break;
            if (line.empty()) {
                head_bytes_ = 0;
                consume(buffer_.find('\n') + 1);
                if (++blank_lines_ > kMaxBlankLines)
                    return fail(400, "empty lines instead of a request line");
                return Progress::kNeedMore;
            }
            if (auto p = read_request_line(line); p == Progress::kFailed) return p;
            consume(buffer_.find('\n') + 1);
            phase_ = Phase::kFields;
            return Progress::kNeedMore;
        case Phase::kFields:
        case Phase::kTrailer:
            if (!next_line(line, limits_.max_field_line, 431, "a header line")) break;
            if (line.empty()) {
                consume(buffer_.find('\n') + 1);
                if (phase_ == Phase::kTrailer) {
                    phase_ = Phase::kDone;
                    return Progress::kComplete;
                }
                return end_head();
            }
            if (auto p = read_field(line, phase_ == Phase::kFields ? head_.fields : trailers_,
                                    field_count_);
                p == Progress::kFailed)
                return p;
            consume(buffer_.find('\n') + 1);
            return Progress::kNeedMore;
        case Phase::kChunkSize:
            if (!next_chunk_line(line)) break;
            if (auto p = read_chunk_size(line); p == Progress::kFailed) return p;
            consume(line.size() + 2);
            return Progress::kNeedMore;
        case Phase::kChunkData: {
            const std::size_t n = std::min(chunk_left_, buffer_.size());
            if (n == 0) break;
            body_.append(buffer_, 0, n);
            consume(n);
            chunk_left_ -= n;
            if (chunk_left_ == 0) phase_ = Phase::kChunkEnd;
            return Progress::kNeedMore;
        }
        case Phase::kChunkEnd:
            if (buffer_.size() < 2) {
                if (!buffer_.empty() && buffer_[0] != '\r')
                    return fail(400, "chunk data is not followed by CRLF");
                break;
            }
            if (buffer_.compare(0, 2, "\r\n") != 0)
                return fail(400, "chunk data is not followed by CRLF");
            consume(2);
            phase_ = Phase::kChunkSize;
            return Progress::kNeedMore;
        case Phase::kBody: {
            const std::size_t n = std::min(head_.content_length - body_.size(), buffer_.size());
            body_.append(buffer_, 0, n);
            consume(n);
            if (body_.size() == head_.content_length) {
                phase_ = Phase::kDone;
                return Progress::kComplete;
            }
            break;
        }
        case Phase::kDone:
            return Progress::kComplete;
    }
    return failed_ ? Progress::kFailed : Progress::kNeedMore;
}

RequestReader::Progress RequestReader::advance() {
    if (failed_) return Progress::kFailed;
    for (;;) {
        const std::size_t before = buffer_.size();
        const Phase phase = phase_;
        const Progress p = step();
        if (p != Progress::kNeedMore) return p;
        // Nothing consumed and no phase change: the bytes for the next step are not here yet.
        if (buffer_.size() == before && phase_ == phase) return Progress::kNeedMore;
    }
}

std::string RequestReader::take() {
    std::string out;
    out.reserve(head_bytes_ + body_.size() + 64);
    out += head_.method;
    out += ' ';
    out += head_.target;
    out += ' ';
    out += head_.version;
    out += "\r\n";
    for (const auto& f : head_.fields) {
        if (base::ascii_iequals(f.name, "Transfer-Encoding") ||
            base::ascii_iequals(f.name, "Content-Length") ||
            base::ascii_iequals(f.name, "Expect") || base::ascii_iequals(f.name, kFormBodyField))
            continue;
        out += f.name;
        out += ": ";
        const bool form = base::ascii_iequals(f.name, "Content-Type") && is_form_type(f.value);
        out += form ? "application/octet-stream" : f.value;
        out += "\r\n";
        if (form && starts_with_ci(trim_ows(f.value), "application/x-www-form-urlencoded")) {
            out += kFormBodyField;
            out += ": urlencoded\r\n";
        }
    }
    if (!body_.empty() || head_.chunked || head_.content_length > 0)
        out += "Content-Length: " + std::to_string(body_.size()) + "\r\n";
    out += "\r\n";
    out += body_;
    // The next request starts with what is left in the buffer.
    std::string rest = std::move(buffer_);
    *this = RequestReader(limits_);
    buffer_ = std::move(rest);
    return out;
}

}  // namespace glassbox::gateway
