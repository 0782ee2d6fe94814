// Reading RDF through serd into batches of triples (and N-Quads through serd, the reference
// parser).
#include "loader/rdf_reader.hpp"

#include <serd/serd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <memory>
#include <system_error>
#include <utility>

#include "base/utf8.hpp"
#include "loader/plain_statement.hpp"
#include "schema/nquads.hpp"

namespace glassbox::loader {
namespace {

using base::ErrorType;
using schema::Term;
using schema::Triple;

// serd reads its input a page at a time; bigger pages mean fewer source calls.
constexpr std::size_t kPageSize = std::size_t{64} * 1024;
// N-Triples/N-Quads lines are held whole before parsing; a longer one is dropped (an error,
// or an issue when lenient) so that memory stays bounded whatever the input.
constexpr std::size_t kMaxLineBytes = std::size_t{64} * 1024 * 1024;
constexpr const char* kLineTooLong = "line longer than 64 MiB";
// A blank node used as a graph name becomes this IRI + its label (a graph is an IRI here).
constexpr std::string_view kBlankGraphPrefix = "urn:glassbox:bnode:";

struct FileCloser {
    void operator()(std::FILE* file) const noexcept { std::fclose(file); }
};
using FilePtr = std::unique_ptr<std::FILE, FileCloser>;

struct ReaderFree {
    void operator()(SerdReader* reader) const noexcept { serd_reader_free(reader); }
};
using ReaderPtr = std::unique_ptr<SerdReader, ReaderFree>;

struct EnvFree {
    void operator()(SerdEnv* env) const noexcept { serd_env_free(env); }
};
using EnvPtr = std::unique_ptr<SerdEnv, EnvFree>;

const uint8_t* bytes(const char* text) { return reinterpret_cast<const uint8_t*>(text); }

std::string_view view(const SerdNode* node) {
    return {reinterpret_cast<const char*>(node->buf), node->n_bytes};
}

std::string format_serd_error(const SerdError* error) {
    std::array<char, 512> buf{};
    va_list args;
    va_copy(args, *error->args);
    std::vsnprintf(buf.data(), buf.size(), error->fmt, args);
    va_end(args);
    std::string message(buf.data());
    while (!message.empty() && (message.back() == '\n' || message.back() == '\r')) {
        message.pop_back();
    }
    return message;
}

// FNV-1a 32: small, stable across runs and platforms (std::hash is neither promised).
std::uint32_t fnv1a32(std::string_view text) {
    std::uint32_t hash = 2166136261u;
    for (char c : text) {
        hash ^= static_cast<unsigned char>(c);
        hash *= 16777619u;
    }
    return hash;
}

size_t append_to_string(const void* buf, size_t len, void* stream) {
    static_cast<std::string*>(stream)->append(static_cast<const char*>(buf), len);
    return len;
}

// Terms hold their text in std::string; when a reused batch slot already holds a term of the
// same kind, its string is overwritten in place, keeping its capacity (no allocation per term
// once the batch is warm). The const_cast is sound: the Term itself is not const, only the
// accessor's view of it.
void set_iri(Term& term, std::string_view value) {
    if (term.is_iri()) {
        const_cast<schema::Iri&>(term.as_iri()).value.assign(value);
    } else {
        term = schema::Iri{std::string(value)};
    }
}

void set_blank(Term& term, std::string_view prefix, std::string_view label) {
    if (term.is_blank()) {
        auto& id = const_cast<schema::BlankNode&>(term.as_blank()).id;
        id.assign(prefix);
        id.append(label);
    } else {
        std::string id;
        id.reserve(prefix.size() + label.size());
        id.append(prefix);
        id.append(label);
        term = schema::BlankNode{std::move(id)};
    }
}

void set_literal(Term& term, std::string_view value, std::string_view datatype,
                 std::string_view language) {
    if (datatype == schema::kXsdString) datatype = {};
    if (term.is_literal()) {
        auto& lit = const_cast<schema::Literal&>(term.as_literal());
        lit.value.assign(value);
        lit.datatype.assign(datatype);
        lit.language.assign(language);
    } else {
        term = schema::Literal{std::string(value), std::string(datatype), std::string(language)};
    }
}

// Turns serd's nodes into terms: expands prefixed names and relative IRIs through the env,
// scopes blank-node labels. Failures leave a message in error().
class TermMaker {
public:
    TermMaker(SerdEnv* env, std::string blank_prefix)
        : env_(env), blank_prefix_(std::move(blank_prefix)) {}

    // Turtle/TriG: serd names `[]` and collection nodes "b1", "b2", … (it renames a written
    // `_:b1` to "B1" to keep them apart) and starts again at b1 with each new serd reader.
    // After a lenient restart the numbers are shifted past every one already used.
    void set_renumber_generated(bool on) { renumber_ = on; }
    void start_new_reader() { genid_base_ = genid_max_; }

    bool subject(Term& out, const SerdNode* node) { return resource(out, node); }
    bool predicate(Term& out, const SerdNode* node) {
        if (node->type == SERD_BLANK) return fail("a blank node cannot be a predicate");
        return resource(out, node);
    }
    bool object(Term& out, const SerdNode* node, const SerdNode* datatype,
                const SerdNode* language) {
        if (node->type != SERD_LITERAL) return resource(out, node);
        std::string_view dt;
        if (datatype != nullptr && datatype->type != SERD_NOTHING) {
            if (!expand(datatype, datatype_)) return false;
            dt = datatype_;
        }
        std::string_view lang;
        if (language != nullptr && language->type != SERD_NOTHING) {
            lang = view(language);
            dt = {};
        }
        set_literal(out, view(node), dt, lang);
        return true;
    }
    bool graph(std::optional<std::string>& out, const SerdNode* node) {
        if (node->type == SERD_BLANK) {
            label(node);
            out.emplace(kBlankGraphPrefix);
            out->append(blank_prefix_);
            out->append(label_);
            return true;
        }
        if (!expand(node, scratch_)) return false;
        if (out) {
            out->assign(scratch_);
        } else {
            out.emplace(scratch_);
        }
        return true;
    }

    const std::string& error() const { return error_; }

private:
    bool resource(Term& out, const SerdNode* node) {
        if (node->type == SERD_BLANK) {
            label(node);
            set_blank(out, blank_prefix_, label_);
            return true;
        }
        if (node->type == SERD_URI && serd_uri_string_has_scheme(node->buf)) {
            set_iri(out, view(node));  // absolute: as it stands, without a copy into scratch_
            return true;
        }
        if (!expand(node, scratch_)) return false;
        set_iri(out, scratch_);
        return true;
    }

    void label(const SerdNode* node) {
        const std::string_view raw = view(node);
        label_.assign(raw);
        if (!renumber_ || raw.size() < 2 || raw[0] != 'b') return;
        std::uint64_t number = 0;
        for (std::size_t i = 1; i < raw.size(); ++i) {
            if (raw[i] < '0' || raw[i] > '9' || i > 18) return;
            number = number * 10 + static_cast<std::uint64_t>(raw[i] - '0');
        }
        number += genid_base_;
        genid_max_ = std::max(genid_max_, number);
        label_ = "b" + std::to_string(number);
    }

    bool expand(const SerdNode* node, std::string& out) {
        out.clear();
        if (node->type == SERD_URI) {
            if (serd_uri_string_has_scheme(node->buf)) {
                out.assign(view(node));
                return true;
            }
            SerdURI base{};
            const SerdNode* base_node = serd_env_get_base_uri(env_, &base);
            if (base_node == nullptr || base_node->buf == nullptr || base_node->n_bytes == 0) {
                return fail("relative IRI <" + std::string(view(node)) + "> and no base IRI");
            }
            SerdURI relative{};
            SerdURI resolved{};
            serd_uri_parse(node->buf, &relative);
            serd_uri_resolve(&relative, &base, &resolved);
            serd_uri_serialise(&resolved, append_to_string, &out);
            return true;
        }
        if (node->type == SERD_CURIE) {
            SerdChunk prefix{};
            SerdChunk suffix{};
            if (serd_env_expand(env_, node, &prefix, &suffix) != SERD_SUCCESS) {
                const std::string_view name = view(node);
                return fail("undefined prefix '" + std::string(name.substr(0, name.find(':'))) +
                            ":' in " + std::string(name));
            }
            out.append(reinterpret_cast<const char*>(prefix.buf), prefix.len);
            out.append(reinterpret_cast<const char*>(suffix.buf), suffix.len);
            return true;
        }
        return fail("unexpected node '" + std::string(view(node)) + "'");
    }

    bool fail(std::string message) {
        error_ = std::move(message);
        return false;
    }

    SerdEnv* env_;
    std::string blank_prefix_;
    bool renumber_ = false;
    std::uint64_t genid_base_ = 0;
    std::uint64_t genid_max_ = 0;
    std::string scratch_;
    std::string datatype_;
    std::string label_;
    std::string error_;
};

// The first error serd reported during one read call.
struct SerdErrorInfo {
    bool set = false;
    std::uint64_t line = 0;    // 1-based, relative to where this serd read began
    std::uint64_t column = 0;  // serd's, 0-based
    std::string message;
};

// serd 0.30 counts columns from 1 on a read's first line but from 0 after each newline.
std::uint64_t one_based_column(const SerdErrorInfo& error) {
    return error.line <= 1 ? std::max<std::uint64_t>(error.column, 1) : error.column + 1;
}

SerdStatus capture_error(void* handle, const SerdError* error) {
    auto* info = static_cast<SerdErrorInfo*>(handle);
    if (!info->set) {
        info->set = true;
        info->line = error->line;
        info->column = error->col;
        try {
            info->message = format_serd_error(error);
        } catch (const std::exception&) {
            info->message = "syntax error";  // no memory for the message; keep the place
        }
    }
    return SERD_SUCCESS;
}

// State of one read_rdf call, shared by serd's callbacks.
class RdfRead {
public:
    RdfRead(const std::filesystem::path& path, const RdfReadOptions& options, RdfFormat format,
            const RdfBatchSink& on_batch, const RdfIssueSink& on_issue,
            const RdfProgressSink& on_progress, SerdEnv* env, std::string blank_prefix)
        : path_(path.string()),
          options_(options),
          format_(format),
          batch_size_(options.batch_size == 0 ? kDefaultRdfBatchSize : options.batch_size),
          on_batch_(on_batch),
          on_issue_(on_issue),
          on_progress_(on_progress),
          env_(env),
          maker_(env, std::move(blank_prefix)) {
        batch_.reserve(std::min<std::size_t>(batch_size_, 1 << 16));
        maker_.set_renumber_generated(format == RdfFormat::kTurtle || format == RdfFormat::kTriG);
    }

    base::Result<RdfReadStats> run(std::FILE* file, std::uint64_t size) {
        total_ = size;
        const bool by_line = format_ == RdfFormat::kNTriples || format_ == RdfFormat::kNQuads;
        auto done = by_line ? read_lines(file) : read_stream(file);
        if (!done) return std::move(done).error();
        if (auto flushed = flush(); !flushed) return flushed.error();
        stats_.bytes = read_;
        return stats_;
    }

private:
    static SerdSyntax syntax(RdfFormat format) {
        switch (format) {
            case RdfFormat::kNTriples:
                return SERD_NTRIPLES;
            case RdfFormat::kNQuads:
                return SERD_NQUADS;
            case RdfFormat::kTurtle:
                return SERD_TURTLE;
            case RdfFormat::kTriG:
                return SERD_TRIG;
        }
        return SERD_TURTLE;
    }

    ReaderPtr new_reader() {
        ReaderPtr reader(serd_reader_new(syntax(format_), this, nullptr, &RdfRead::on_base,
                                         &RdfRead::on_prefix, &RdfRead::on_statement, nullptr));
        // Strict: invalid UTF-8 and bad IRIs are errors, not silently patched (serd's lax mode
        // writes U+FFFD); lenient reading does its own recovery (see read_lines/read_stream).
        serd_reader_set_strict(reader.get(), true);
        serd_reader_set_error_sink(reader.get(), &capture_error, &serd_error_);
        return reader;
    }

    static SerdStatus on_base(void* handle, const SerdNode* uri) {
        return serd_env_set_base_uri(static_cast<RdfRead*>(handle)->env_, uri);
    }

    static SerdStatus on_prefix(void* handle, const SerdNode* name, const SerdNode* uri) {
        return serd_env_set_prefix(static_cast<RdfRead*>(handle)->env_, name, uri);
    }

    static SerdStatus on_statement(void* handle, SerdStatementFlags /*flags*/,
                                   const SerdNode* graph, const SerdNode* subject,
                                   const SerdNode* predicate, const SerdNode* object,
                                   const SerdNode* datatype, const SerdNode* language) {
        auto* read = static_cast<RdfRead*>(handle);
        // Nothing may unwind through serd's C frames: an exception (a throwing callback, no
        // memory) stops the read as an internal error.
        try {
            return read->add(graph, subject, predicate, object, datatype, language);
        } catch (const std::exception& e) {
            read->stop_ = base::make_error(ErrorType::kInternal,
                                           read->path_ + ": reading stopped: " + e.what());
            return SERD_ERR_INTERNAL;
        }
    }

    SerdStatus add(const SerdNode* graph, const SerdNode* subject, const SerdNode* predicate,
                   const SerdNode* object, const SerdNode* datatype, const SerdNode* language) {
        if (stop_) return SERD_ERR_UNKNOWN;
        if (used_ == batch_.size()) batch_.emplace_back();
        Triple& t = batch_[used_];
        bool ok = maker_.subject(t.s, subject) && maker_.predicate(t.p, predicate) &&
                  maker_.object(t.o, object, datatype, language);
        if (ok) {
            if (graph != nullptr && graph->type != SERD_NOTHING) {
                ok = maker_.graph(t.graph, graph);
            } else if (options_.graph) {
                if (t.graph) {
                    t.graph->assign(*options_.graph);
                } else {
                    t.graph = *options_.graph;
                }
            } else {
                t.graph.reset();
            }
        }
        if (!ok) {
            // serd gives no position for a term it accepted but we cannot use (an undefined
            // prefix): in lenient mode only that statement is left out.
            if (options_.lenient) {
                issue(0, 0, maker_.error());
                ++stats_.skipped;
                return SERD_SUCCESS;
            }
            stop_ = base::make_error(ErrorType::kInvalidRequest, path_ + ": " + maker_.error(),
                                     base::ErrorPlace{path_, 0, 0});
            return SERD_ERR_BAD_CURIE;
        }
        if (options_.check_statement) {
            if (auto refusal = options_.check_statement(t)) {
                // By line the line is exact; a stream only knows how far serd has read.
                const std::uint64_t line = flush_between_lines_ ? current_line_ : 0;
                std::string message =
                    flush_between_lines_
                        ? std::move(*refusal)
                        : "near line " + std::to_string(lines_read_ + 1) + ": " + *refusal;
                if (options_.lenient) {
                    issue(line, 0, std::move(message));
                    ++stats_.skipped;
                    return SERD_SUCCESS;
                }
                stop_ = located(line, 0, message);
                return SERD_ERR_UNKNOWN;
            }
        }
        ++used_;
        ++stats_.statements;
        if (!flush_between_lines_ && used_ >= batch_size_) {
            if (auto flushed = flush(); !flushed) return SERD_ERR_UNKNOWN;
        }
        return SERD_SUCCESS;
    }

    base::Result<void> flush() {
        if (stop_) return *stop_;
        if (used_ == 0) return {};
        auto sent = on_batch_(std::span<const Triple>(batch_.data(), used_));
        used_ = 0;
        if (!sent) {
            stop_ = sent.error();
            return sent.error();
        }
        return {};
    }

    void issue(std::uint64_t line, std::uint64_t column, std::string message) {
        ++stats_.issues;
        if (on_issue_) on_issue_(RdfIssue{path_, line, column, std::move(message)});
    }

    base::Error located(std::uint64_t line, std::uint64_t column,
                        const std::string& message) const {
        return base::make_error(ErrorType::kInvalidRequest,
                                RdfIssue{path_, line, column, message}.describe(),
                                base::ErrorPlace{path_, line, column});
    }

    base::Error read_error() const {
        return base::make_error(ErrorType::kInvalidRequest,
                                path_ + ": read error: " + std::strerror(errno));
    }

    void progress() {
        if (on_progress_) on_progress_(read_, total_);
    }

    // N-Triples and N-Quads hold one statement per line, so each line is handed to serd on
    // its own: line numbers are exact, a bad line is dropped whole (serd emits a statement
    // before it checks the final '.', and its N-Quads reader does not recover at all), and
    // UTF-8 is checked here with an exact column.
    base::Result<void> read_lines(std::FILE* file) {
        flush_between_lines_ = true;
        ReaderPtr reader = new_reader();
        std::vector<char> block(kPageSize + 1);
        std::string carry;
        bool too_long = false;  // the current line passed kMaxLineBytes: dropped, not held
        std::uint64_t line_no = 0;
        for (;;) {
            const std::size_t n = std::fread(block.data(), 1, kPageSize, file);
            if (n == 0) {
                if (std::ferror(file)) return read_error();
                break;
            }
            read_ += n;
            progress();
            char* begin = block.data();
            char* const end = begin + n;
            while (begin < end) {
                auto* newline = static_cast<char*>(
                    std::memchr(begin, '\n', static_cast<std::size_t>(end - begin)));
                if (newline == nullptr) {
                    if (!too_long) carry.append(begin, end);
                    if (carry.size() > kMaxLineBytes) {
                        too_long = true;
                        carry.clear();
                    }
                    break;
                }
                ++line_no;
                if (too_long) {
                    too_long = false;
                    carry.clear();
                    auto done = bad_line(line_no, 0, kLineTooLong);
                    if (!done) return done;
                } else if (carry.empty()) {
                    *newline = '\0';
                    auto done = read_line(reader.get(), begin,
                                          static_cast<std::size_t>(newline - begin), line_no);
                    if (!done) return done;
                } else {
                    carry.append(begin, newline);
                    auto done = read_line(reader.get(), carry.c_str(), carry.size(), line_no);
                    if (!done) return done;
                    carry.clear();
                }
                begin = newline + 1;
            }
        }
        if (too_long) return bad_line(line_no + 1, 0, kLineTooLong);
        if (!carry.empty()) {
            auto done = read_line(reader.get(), carry.c_str(), carry.size(), line_no + 1);
            if (!done) return done;
        }
        return {};
    }

    base::Result<void> read_line(SerdReader* reader, const char* text, std::size_t size,
                                 std::uint64_t line_no) {
        if (size == 0) return {};
        const std::string_view line(text, size);
        if (std::memchr(text, '\0', size) != nullptr) {
            return bad_line(line_no, line.find('\0') + 1, "NUL byte in the input");
        }
        if (const auto at = base::invalid_utf8_at(line); at != std::string_view::npos) {
            return bad_line(line_no, at + 1, invalid_utf8_message(line, at));
        }
        current_line_ = line_no;
        if (const auto plain = split_plain_statement(line, format_ == RdfFormat::kNQuads)) {
            add_plain(*plain);
            if (stop_) return *stop_;
            if (used_ >= batch_size_) return flush();
            return {};
        }
        const std::size_t used_before = used_;
        const std::uint64_t statements_before = stats_.statements;
        serd_error_ = SerdErrorInfo{};
        const SerdStatus st = serd_reader_read_string(reader, bytes(text));
        if (stop_) return *stop_;
        // serd's N-Quads reader stops quietly (SERD_FAILURE) at text that cannot start a
        // statement, as in `<s> <p> <o> . junk`; only a blank or comment line may do that.
        const auto first = line.find_first_not_of(" \t\r");
        const bool blank = first == std::string_view::npos || line[first] == '#';
        if (st == SERD_FAILURE && !serd_error_.set && !blank) {
            used_ = used_before;
            stats_.statements = statements_before;
            return bad_line(line_no, 0,
                            "text that is not a statement (after a '.' or at the start)");
        }
        if (st > SERD_FAILURE || serd_error_.set) {
            used_ = used_before;
            stats_.statements = statements_before;
            const std::string message =
                serd_error_.set ? serd_error_.message
                                : std::string(reinterpret_cast<const char*>(serd_strerror(st)));
            return bad_line(line_no, serd_error_.set ? one_based_column(serd_error_) : 1, message);
        }
        if (used_ >= batch_size_) return flush();
        return {};
    }

    // A plain line's statement, added as serd would hand it over (its nodes point into the line).
    void add_plain(const PlainStatement& plain) {
        const auto node = [](std::string_view text, SerdType type) {
            return SerdNode{bytes(text.data()), text.size(), text.size(), 0, type};
        };
        const SerdNode subject = node(plain.subject, SERD_URI);
        const SerdNode predicate = node(plain.predicate, SERD_URI);
        const SerdNode object =
            node(plain.object, plain.object_is_literal ? SERD_LITERAL : SERD_URI);
        const SerdNode datatype =
            node(plain.datatype, plain.datatype.empty() ? SERD_NOTHING : SERD_URI);
        const SerdNode language =
            node(plain.language, plain.language.empty() ? SERD_NOTHING : SERD_LITERAL);
        const SerdNode graph = node(plain.graph, plain.graph.empty() ? SERD_NOTHING : SERD_URI);
        (void)on_statement(this, 0, &graph, &subject, &predicate, &object, &datatype, &language);
    }

    base::Result<void> bad_line(std::uint64_t line, std::uint64_t column,
                                const std::string& message) {
        if (!options_.lenient) return located(line, column, message);
        issue(line, column, message);
        ++stats_.skipped;
        return {};
    }

    static std::string invalid_utf8_message(std::string_view text, std::size_t at) {
        std::array<char, 64> buf{};
        std::snprintf(buf.data(), buf.size(), "invalid UTF-8 (byte 0x%02X)",
                      static_cast<unsigned>(static_cast<unsigned char>(text[at])));
        return buf.data();
    }

    // Turtle and TriG: serd streams the file a page at a time. An error ends serd's read; in
    // lenient mode a new serd reader starts at the line after the error (prefixes and base
    // live in our env, so they survive), which is what serd's own lax recovery does, minus its
    // habit of patching invalid UTF-8.
    struct PageSource {
        std::FILE* file;
        RdfRead* read;
        std::uint64_t offset;  // file offset of the next byte
    };

    static size_t read_page(void* buf, size_t size, size_t count, void* stream) {
        auto* source = static_cast<PageSource*>(stream);
        const std::size_t n = std::fread(buf, size, count, source->file);
        source->offset += n;
        if (source->offset > source->read->read_) {
            // Lines of the bytes new to this read (a restarted reader re-reads some).
            const std::uint64_t fresh =
                std::min<std::uint64_t>(n, source->offset - source->read->read_);
            const char* first = static_cast<const char*>(buf) + (n - fresh);
            source->read->lines_read_ +=
                static_cast<std::uint64_t>(std::count(first, first + fresh, '\n'));
            source->read->read_ = source->offset;
            try {
                source->read->progress();
            } catch (const std::exception& e) {
                source->read->stop_ = base::make_error(
                    ErrorType::kInternal, source->read->path_ + ": progress callback: " + e.what());
            }
        }
        if (source->read->stop_) return 0;
        return n;
    }

    static int page_error(void* stream) {
        return std::ferror(static_cast<PageSource*>(stream)->file);
    }

    base::Result<void> read_stream(std::FILE* file) {
        flush_between_lines_ = false;
        std::uint64_t start = 0;       // file offset where this serd read begins
        std::uint64_t first_line = 1;  // its line number in the file
        for (;;) {
            if (fseeko(file, static_cast<off_t>(start), SEEK_SET) != 0) return read_error();
            PageSource source{file, this, start};
            ReaderPtr reader = new_reader();
            maker_.start_new_reader();
            serd_error_ = SerdErrorInfo{};
            const SerdStatus st =
                serd_reader_read_source(reader.get(), &RdfRead::read_page, &RdfRead::page_error,
                                        &source, bytes(path_.c_str()), kPageSize);
            if (stop_) return *stop_;
            if (std::ferror(file)) return read_error();
            if (st <= SERD_FAILURE && !serd_error_.set) return {};  // FAILURE: empty input
            std::uint64_t relative_line = 1;
            std::uint64_t column = 1;
            std::string message;
            if (serd_error_.set) {
                relative_line = serd_error_.line;
                column = one_based_column(serd_error_);
                message = serd_error_.message;
            } else {
                // serd fails without a report where no statement can start (a stray `}`).
                auto place = silent_failure_place(file, start);
                if (!place) return place.error();
                relative_line = place->first;
                column = place->second;
                message = "expected a statement";
            }
            const std::uint64_t line = first_line + relative_line - 1;
            std::string text;
            auto next = line_after(file, start, relative_line, text);
            if (!next) return next.error();
            // serd's column for a UTF-8 error is past the bad byte; find the byte itself.
            if (const auto at = base::invalid_utf8_at(text);
                at != std::string_view::npos && message.find("UTF-8") != std::string::npos) {
                column = at + 1;
                message = invalid_utf8_message(text, at);
            }
            if (!options_.lenient) return located(line, column, message);
            issue(line, column, message);
            ++stats_.skipped;
            if (!next.value()) return {};
            start = *next.value();
            first_line = line + 1;
        }
    }

    struct ByteCounter {
        std::FILE* file;
        std::uint64_t count;
    };

    static size_t count_bytes(void* buf, size_t size, size_t count, void* stream) {
        auto* counter = static_cast<ByteCounter*>(stream);
        const std::size_t n = std::fread(buf, size, count, counter->file);
        counter->count += n;
        return n;
    }

    static int counter_error(void* stream) {
        return std::ferror(static_cast<ByteCounter*>(stream)->file);
    }

    static SerdStatus ignore_error(void* /*handle*/, const SerdError* /*error*/) {
        return SERD_SUCCESS;
    }

    // Where a serd read from `start` stops when serd does not say: the same text read again,
    // a byte per page and without emitting anything, stops on the byte serd last looked at.
    // Returns (line relative to start, 1-based column). Only run after such a failure.
    base::Result<std::pair<std::uint64_t, std::uint64_t>> silent_failure_place(
        std::FILE* file, std::uint64_t start) {
        if (fseeko(file, static_cast<off_t>(start), SEEK_SET) != 0) return read_error();
        ByteCounter counter{file, 0};
        ReaderPtr reader(
            serd_reader_new(syntax(format_), nullptr, nullptr, nullptr, nullptr, nullptr, nullptr));
        serd_reader_set_strict(reader.get(), true);
        serd_reader_set_error_sink(reader.get(), &RdfRead::ignore_error, nullptr);
        serd_reader_read_source(reader.get(), &RdfRead::count_bytes, &RdfRead::counter_error,
                                &counter, bytes(path_.c_str()), 1);
        const std::uint64_t stop = start + (counter.count > 0 ? counter.count - 1 : 0);
        if (fseeko(file, static_cast<off_t>(start), SEEK_SET) != 0) return read_error();
        std::uint64_t line = 1;
        std::uint64_t line_start = start;
        std::vector<char> block(kPageSize);
        for (std::uint64_t offset = start; offset < stop;) {
            const std::size_t n = std::fread(block.data(), 1, block.size(), file);
            if (n == 0) break;
            for (std::size_t i = 0; i < n && offset + i < stop; ++i) {
                if (block[i] == '\n') {
                    ++line;
                    line_start = offset + i + 1;
                }
            }
            offset += n;
        }
        return std::pair<std::uint64_t, std::uint64_t>{line, stop - line_start + 1};
    }

    // The offset of the line after line `lines` (1-based) counted from `start`, or nullopt
    // when that line is the last; `text` gets that line. Reads only what this serd reader read.
    base::Result<std::optional<std::uint64_t>> line_after(std::FILE* file, std::uint64_t start,
                                                          std::uint64_t lines, std::string& text) {
        if (fseeko(file, static_cast<off_t>(start), SEEK_SET) != 0) return read_error();
        std::vector<char> block(kPageSize);
        std::uint64_t offset = start;
        std::uint64_t line = 1;
        for (;;) {
            const std::size_t n = std::fread(block.data(), 1, block.size(), file);
            if (n == 0) {
                if (std::ferror(file)) return read_error();
                return std::optional<std::uint64_t>{};
            }
            for (std::size_t i = 0; i < n; ++i) {
                if (block[i] == '\n') {
                    if (line == lines) return std::optional<std::uint64_t>{offset + i + 1};
                    ++line;
                } else if (line == lines && text.size() < (1u << 20)) {
                    text += block[i];
                }
            }
            offset += n;
        }
    }

    std::string path_;
    const RdfReadOptions& options_;
    RdfFormat format_;
    std::size_t batch_size_;
    const RdfBatchSink& on_batch_;
    const RdfIssueSink& on_issue_;
    const RdfProgressSink& on_progress_;
    SerdEnv* env_;
    TermMaker maker_;
    std::vector<Triple> batch_;
    std::size_t used_ = 0;
    bool flush_between_lines_ = false;
    std::optional<base::Error> stop_;
    SerdErrorInfo serd_error_;
    RdfReadStats stats_;
    std::uint64_t read_ = 0;
    std::uint64_t total_ = 0;
    std::uint64_t current_line_ = 0;  // by line: the line handed to serd
    std::uint64_t lines_read_ = 0;    // a stream: newlines in the bytes read so far
};

// ---- N-Quads parsing ----------------------------------------------------------------------

struct TextSource {
    std::string_view text;
    std::size_t offset = 0;
};

size_t read_text(void* buf, size_t size, size_t count, void* stream) {
    auto* source = static_cast<TextSource*>(stream);
    const std::size_t n = std::min(size * count, source->text.size() - source->offset);
    std::memcpy(buf, source->text.data() + source->offset, n);
    source->offset += n;
    return n;
}

int text_error(void* /*stream*/) { return 0; }

struct NquadsParse {
    TermMaker maker;
    std::vector<Triple> triples;
    std::optional<std::string> failure;
};

SerdStatus parse_statement(void* handle, SerdStatementFlags /*flags*/, const SerdNode* graph,
                           const SerdNode* subject, const SerdNode* predicate,
                           const SerdNode* object, const SerdNode* datatype,
                           const SerdNode* language) {
    auto* parse = static_cast<NquadsParse*>(handle);
    try {  // nothing may unwind through serd's C frames
        Triple& t = parse->triples.emplace_back();
        bool ok = parse->maker.subject(t.s, subject) && parse->maker.predicate(t.p, predicate) &&
                  parse->maker.object(t.o, object, datatype, language);
        if (ok && graph != nullptr && graph->type != SERD_NOTHING) {
            ok = parse->maker.graph(t.graph, graph);
        }
        if (!ok) {
            parse->failure = parse->maker.error();
            return SERD_ERR_BAD_ARG;
        }
    } catch (const std::exception& e) {
        parse->failure = std::string("cannot hold the batch: ") + e.what();
        return SERD_ERR_INTERNAL;
    }
    return SERD_SUCCESS;
}

}  // namespace

namespace {

// Errors quote paths, lines and serd's messages, any of which may hold bytes that are not
// UTF-8: every error leaves this file escaped (base::printable_utf8; issue 16).
template <typename T>
base::Result<T> with_printable_error(base::Result<T> result) {
    if (result) return result;
    base::Error error = std::move(result).error();
    error.message = base::printable_utf8(error.message);
    if (error.place) error.place->file = base::printable_utf8(error.place->file);
    return error;
}

base::Result<RdfReadStats> read_rdf_file(const std::filesystem::path& path,
                                         const RdfReadOptions& options,
                                         const RdfBatchSink& on_batch, const RdfIssueSink& on_issue,
                                         const RdfProgressSink& on_progress) {
    RdfFormat format{};
    if (options.format) {
        format = *options.format;
    } else {
        auto guessed = format_from_path(path);
        if (!guessed) return std::move(guessed).error();
        format = *guessed;
    }

    std::error_code ec;
    const auto status = std::filesystem::status(path, ec);
    if (!std::filesystem::exists(status)) {
        return base::make_error(ErrorType::kNotFound, path.string() + ": no such file");
    }
    if (std::filesystem::is_directory(status)) {
        return base::make_error(ErrorType::kInvalidRequest,
                                path.string() + ": is a directory, not an RDF file");
    }
    FilePtr file(std::fopen(path.c_str(), "rb"));
    if (!file) {
        return base::make_error(ErrorType::kInvalidRequest,
                                path.string() + ": cannot open: " + std::strerror(errno));
    }
    const std::uint64_t size =
        std::filesystem::is_regular_file(status) ? std::filesystem::file_size(path, ec) : 0;

    const auto absolute = std::filesystem::absolute(path, ec).lexically_normal();
    const std::string absolute_path = ec ? path.string() : absolute.string();

    std::string base = options.base_iri;
    if (base.empty()) {
        SerdNode uri = serd_node_new_file_uri(bytes(absolute_path.c_str()), nullptr, nullptr, true);
        base.assign(view(&uri));
        serd_node_free(&uri);
    }
    const SerdNode base_node = serd_node_from_string(SERD_URI, bytes(base.c_str()));
    EnvPtr env(serd_env_new(&base_node));

    std::array<char, 16> prefix{};
    std::snprintf(prefix.data(), prefix.size(), "f%08x_", fnv1a32(absolute_path));

    // The callbacks are the caller's code: whatever they throw becomes an error value here.
    try {
        RdfRead read(path, options, format, on_batch, on_issue, on_progress, env.get(),
                     prefix.data());
        return read.run(file.get(), size);
    } catch (const std::exception& e) {
        return base::make_error(ErrorType::kInternal,
                                path.string() + ": reading stopped: " + e.what());
    }
}

base::Result<std::vector<schema::Triple>> parse_nquads_with_serd_unescaped(std::string_view text);

}  // namespace

base::Result<RdfReadStats> read_rdf(const std::filesystem::path& path,
                                    const RdfReadOptions& options, const RdfBatchSink& on_batch,
                                    const RdfIssueSink& on_issue,
                                    const RdfProgressSink& on_progress) {
    return with_printable_error(read_rdf_file(path, options, on_batch, on_issue, on_progress));
}

base::Result<std::vector<schema::Triple>> parse_nquads_with_serd(std::string_view text) {
    return with_printable_error(parse_nquads_with_serd_unescaped(text));
}

namespace {

base::Result<std::vector<schema::Triple>> parse_nquads_with_serd_unescaped(std::string_view text) {
    if (auto problem = schema::nquads_text_problem(text)) return std::move(*problem);
    EnvPtr env(serd_env_new(nullptr));
    NquadsParse parse{TermMaker(env.get(), ""), {}, {}};
    parse.triples.reserve(static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')) + 1);
    ReaderPtr reader(
        serd_reader_new(SERD_NQUADS, &parse, nullptr, nullptr, nullptr, &parse_statement, nullptr));
    serd_reader_set_strict(reader.get(), true);
    SerdErrorInfo error;
    serd_reader_set_error_sink(reader.get(), &capture_error, &error);
    TextSource source{text, 0};
    const SerdStatus st = serd_reader_read_source(reader.get(), &read_text, &text_error, &source,
                                                  bytes("nquads"), kPageSize);
    if (parse.failure) {
        return base::make_error(ErrorType::kInvalidRequest, "N-Quads: " + *parse.failure);
    }
    if (st > SERD_FAILURE || error.set) {  // FAILURE: empty input
        std::string where =
            std::to_string(error.line) + ":" + std::to_string(one_based_column(error));
        return base::make_error(
            ErrorType::kInvalidRequest,
            "N-Quads " + where + ": " +
                (error.set ? error.message
                           : std::string(reinterpret_cast<const char*>(serd_strerror(st)))));
    }
    return std::move(parse.triples);
}

}  // namespace

}  // namespace glassbox::loader
