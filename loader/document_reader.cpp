// Document readers: walks a folder in sorted order, reads .txt/.md files whole and .jsonl files
// line by line, and checks every text (UTF-8, sizes, required fields) before handing it on.
#include "loader/document_reader.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <system_error>
#include <unordered_map>
#include <vector>

#include "base/ascii.hpp"
#include "loader/chunker.hpp"

#include "schema/messages.hpp"
#include "schema/untrusted_json.hpp"

namespace glassbox::loader {

using base::Error;
using base::ErrorType;
using base::make_error;
using base::Result;

namespace {

namespace fs = std::filesystem;

enum class Format { kText, kMarkdown, kJsonl, kUnsupported };

Format format_of(const fs::path& path) {
    const std::string extension = base::ascii_lower(path.extension().string());
    if (extension == ".txt") return Format::kText;
    if (extension == ".md" || extension == ".markdown") return Format::kMarkdown;
    if (extension == ".jsonl") return Format::kJsonl;
    return Format::kUnsupported;
}

// RFC 3986 unreserved characters stay; every other byte is %XX (and '/' when !keep_slash).
std::string percent_encode(std::string_view bytes, bool keep_slash) {
    static constexpr char kHex[] = "0123456789ABCDEF";
    std::string out;
    out.reserve(bytes.size());
    for (const char ch : bytes) {
        const auto b = static_cast<unsigned char>(ch);
        const bool unreserved = (b >= 'A' && b <= 'Z') || (b >= 'a' && b <= 'z') ||
                                (b >= '0' && b <= '9') || b == '-' || b == '.' || b == '_' ||
                                b == '~';
        if (unreserved || (keep_slash && b == '/')) {
            out += ch;
        } else {
            out += '%';
            out += kHex[b >> 4U];
            out += kHex[b & 0x0FU];
        }
    }
    return out;
}

bool is_blank(char ch) {
    return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n' || ch == '\f' || ch == '\v';
}

std::string_view trim(std::string_view text) {
    while (!text.empty() && is_blank(text.front())) text.remove_prefix(1);
    while (!text.empty() && is_blank(text.back())) text.remove_suffix(1);
    return text;
}

// At most `max_chars` code points of valid UTF-8, cut at a code point boundary.
std::string cap_title(std::string_view title, std::size_t max_chars) {
    std::size_t chars = 0;
    for (std::size_t i = 0; i < title.size(); ++i) {
        if ((static_cast<unsigned char>(title[i]) & 0xC0U) == 0x80U) continue;
        if (chars == max_chars) return std::string(trim(title.substr(0, i)));
        ++chars;
    }
    return std::string(title);
}

// A file name as a title: itself when valid UTF-8, else percent-encoded (still readable).
std::string file_name_title(const fs::path& path) {
    const std::string name = path.filename().string();
    return find_invalid_utf8(name) ? percent_encode(name, true) : name;
}

std::string where(const fs::path& path, std::uint64_t line) {
    return path.string() + (line > 0 ? ":" + std::to_string(line) : std::string());
}

Error invalid(const fs::path& path, std::uint64_t line, const std::string& why) {
    return make_error(ErrorType::kInvalidRequest, where(path, line) + ": " + why,
                      base::ErrorPlace{path.string(), line, 0});
}

// Lines of `text` in order, without their line break.
template <typename Fn>
void for_each_line(std::string_view text, Fn&& fn) {
    std::size_t p = 0;
    while (p <= text.size()) {
        const std::size_t end = text.find('\n', p);
        const std::size_t stop = end == std::string_view::npos ? text.size() : end;
        if (!fn(text.substr(p, stop - p))) return;
        if (end == std::string_view::npos) return;
        p = end + 1;
    }
}

std::string first_line_title(std::string_view text) {
    std::string title;
    for_each_line(text, [&](std::string_view line) {
        line = trim(line);
        if (line.empty()) return true;
        title = std::string(line);
        return false;
    });
    return title;
}

// CommonMark: up to three spaces of indent, '#', then a space or tab (or nothing); a closing run
// of '#' preceded by a space is not part of the heading.
std::optional<std::string_view> level_one_heading(std::string_view line) {
    std::size_t indent = 0;
    while (indent < line.size() && indent < 4 && line[indent] == ' ') ++indent;
    if (indent > 3) return std::nullopt;
    line.remove_prefix(indent);
    if (line.empty() || line[0] != '#') return std::nullopt;
    line.remove_prefix(1);
    if (!line.empty() && line[0] != ' ' && line[0] != '\t' && line[0] != '\r') return std::nullopt;
    line = trim(line);
    std::size_t closing = line.size();
    while (closing > 0 && line[closing - 1] == '#') --closing;
    if (closing == 0) return std::string_view{};
    if (closing < line.size() && is_blank(line[closing - 1])) line = trim(line.substr(0, closing));
    return line;
}

bool is_fence(std::string_view line) {
    line = trim(line);
    return line.starts_with("```") || line.starts_with("~~~");
}

// The first "# " heading outside code fences and YAML front matter, else the first non-empty line
// after the front matter.
std::string markdown_title(std::string_view text) {
    std::optional<std::string> heading;
    std::string first_line;
    bool in_fence = false;
    bool in_front_matter = false;
    bool first = true;
    for_each_line(text, [&](std::string_view line) {
        if (first) {
            first = false;
            if (trim(line) == "---") {
                in_front_matter = true;
                return true;
            }
        }
        if (in_front_matter) {
            if (trim(line) == "---" || trim(line) == "...") in_front_matter = false;
            return true;
        }
        if (is_fence(line)) {
            in_fence = !in_fence;
            return true;
        }
        if (in_fence) return true;
        if (first_line.empty() && !trim(line).empty()) first_line = std::string(trim(line));
        if (const auto h = level_one_heading(line); h && !h->empty()) {
            heading = std::string(*h);
            return false;
        }
        return true;
    });
    return heading ? *heading : first_line;
}

// Invalid UTF-8 as an error naming the line (from 1) and the byte within it (from 1).
std::optional<Error> check_utf8(std::string_view text, const fs::path& path,
                                std::uint64_t first_line) {
    const auto bad = find_invalid_utf8(text);
    if (!bad) return std::nullopt;
    const std::string_view before = text.substr(0, *bad);
    const std::uint64_t line =
        first_line + static_cast<std::uint64_t>(std::count(before.begin(), before.end(), '\n'));
    const std::size_t line_start = before.rfind('\n');
    const std::size_t column =
        *bad - (line_start == std::string_view::npos ? 0 : line_start + 1) + 1;
    return invalid(path, line, "not valid UTF-8 (byte " + std::to_string(column) + " of the line)");
}

constexpr std::string_view kByteOrderMark = "\xEF\xBB\xBF";

struct CloseFile {
    void operator()(std::FILE* file) const noexcept { std::fclose(file); }
};
using File = std::unique_ptr<std::FILE, CloseFile>;

Result<File> open_file(const fs::path& path) {
    File file(std::fopen(path.c_str(), "rb"));
    if (!file) {
        return make_error(ErrorType::kInvalidRequest, path.string() + ": cannot open: " +
                                                          std::generic_category().message(errno));
    }
    return file;
}

class Reader {
public:
    Reader(const ReadOptions& options, const DocumentFn& on_document)
        : options_(options), on_document_(on_document) {}

    Result<void> read_file(const fs::path& path, Format format) {
        ++summary_.files;
        return format == Format::kJsonl ? read_jsonl(path) : read_whole(path, format);
    }

    void skip(const fs::path& path, std::string_view why) {
        ++summary_.skipped;
        if (options_.on_skip) options_.on_skip(path, why);
    }

    const ReadSummary& summary() const noexcept { return summary_; }

private:
    Result<void> emit(ReadDocument&& document) {
        ++summary_.documents;
        return on_document_(std::move(document));
    }

    Result<void> read_whole(const fs::path& path, Format format) {
        auto file = open_file(path);
        if (!file) return std::move(file).error();
        std::string text;
        char buffer[1 << 16];
        for (;;) {
            const std::size_t n = std::fread(buffer, 1, sizeof buffer, file->get());
            if (n == 0) break;
            if (text.size() + n > options_.max_document_bytes) {
                return invalid(path, 0,
                               "larger than " + std::to_string(options_.max_document_bytes) +
                                   " bytes (ReadOptions::max_document_bytes)");
            }
            text.append(buffer, n);
        }
        if (std::ferror(file->get()) != 0) return invalid(path, 0, "read failed");
        if (text.starts_with(kByteOrderMark)) text.erase(0, kByteOrderMark.size());
        if (auto error = check_utf8(text, path, 1)) return *error;

        ReadDocument document;
        document.uri = file_uri(path);
        const std::string title =
            format == Format::kMarkdown ? markdown_title(text) : first_line_title(text);
        document.title =
            cap_title(title.empty() ? file_name_title(path) : title, options_.max_title_chars);
        document.media_type =
            std::string(format == Format::kMarkdown ? kMediaTypeMarkdown : kMediaTypeText);
        document.path = path;
        document.text = std::move(text);
        return emit(std::move(document));
    }

    // Streams the file a block at a time: memory holds one line (at most max_document_bytes).
    Result<void> read_jsonl(const fs::path& path) {
        auto file = open_file(path);
        if (!file) return std::move(file).error();
        std::unordered_map<std::string, std::uint64_t> seen;  // doc_id -> its line
        std::string line;
        std::uint64_t number = 0;
        char buffer[1 << 16];
        for (;;) {
            const std::size_t n = std::fread(buffer, 1, sizeof buffer, file->get());
            if (n == 0) break;
            std::string_view block(buffer, n);
            while (!block.empty()) {
                const std::size_t newline = block.find('\n');
                const std::string_view part = block.substr(0, newline);
                if (line.size() + part.size() > options_.max_document_bytes) {
                    return invalid(path, number + 1,
                                   "line longer than " +
                                       std::to_string(options_.max_document_bytes) +
                                       " bytes (ReadOptions::max_document_bytes)");
                }
                line.append(part);
                if (newline == std::string_view::npos) break;
                block.remove_prefix(newline + 1);
                if (auto r = read_jsonl_line(path, ++number, line, seen); !r) return r;
                line.clear();
            }
        }
        if (std::ferror(file->get()) != 0) return invalid(path, number + 1, "read failed");
        if (!line.empty()) return read_jsonl_line(path, ++number, line, seen);
        return {};
    }

    Result<void> read_jsonl_line(const fs::path& path, std::uint64_t number, std::string_view line,
                                 std::unordered_map<std::string, std::uint64_t>& seen) {
        if (number == 1 && line.starts_with(kByteOrderMark))
            line.remove_prefix(kByteOrderMark.size());
        if (trim(line).empty()) return {};  // blank lines between records are harmless
        if (auto error = check_utf8(line, path, number)) return *error;
        auto parsed = schema::parse_untrusted_json(line);
        if (!parsed) return invalid(path, number, "not JSON: " + parsed.error().message);
        const nlohmann::json& object = *parsed;
        if (!object.is_object())
            return invalid(path, number,
                           std::string("expected a JSON object, got ") + object.type_name());

        const auto required_string = [&](const char* key) -> Result<std::string> {
            const auto found = object.find(key);
            if (found == object.end() || found->is_null()) {
                return invalid(path, number, std::string("\"") + key + "\" is missing");
            }
            if (!found->is_string()) {
                return invalid(
                    path, number,
                    std::string("\"") + key + "\" must be a string, got " + found->type_name());
            }
            auto value = found->get<std::string>();
            if (trim(value).empty())
                return invalid(path, number, std::string("\"") + key + "\" is empty");
            return value;
        };
        auto doc_id = required_string("doc_id");
        if (!doc_id) return std::move(doc_id).error();
        auto text = required_string("text");
        if (!text) return std::move(text).error();
        std::string title;
        if (const auto found = object.find("title"); found != object.end() && !found->is_null()) {
            if (!found->is_string()) {
                return invalid(
                    path, number,
                    std::string("\"title\" must be a string, got ") + found->type_name());
            }
            title = std::string(trim(found->get_ref<const std::string&>()));
        }
        if (const auto [at, added] = seen.emplace(*doc_id, number); !added) {
            return invalid(path, number,
                           "doc_id \"" + *doc_id + "\" repeats line " + std::to_string(at->second));
        }

        ReadDocument document;
        document.uri = jsonl_document_uri(*doc_id);
        document.title =
            cap_title(title.empty() ? std::string(trim(*doc_id)) : title, options_.max_title_chars);
        document.text = std::move(text).value();
        document.media_type = std::string(kMediaTypeText);
        document.path = path;
        document.line = number;
        return emit(std::move(document));
    }

    const ReadOptions& options_;
    const DocumentFn& on_document_;
    ReadSummary summary_;
};

struct Entry {
    fs::path path;
    Format format = Format::kUnsupported;
    std::string skip_reason;  // empty: read it
};

bool is_hidden(const fs::path& path) {
    const std::string name = path.filename().string();
    return !name.empty() && name[0] == '.';
}

Result<std::vector<Entry>> list_folder(const fs::path& folder) {
    std::vector<Entry> entries;
    std::error_code ec;
    fs::recursive_directory_iterator it(folder, fs::directory_options::none, ec);
    const fs::recursive_directory_iterator end;
    for (; !ec && it != end; it.increment(ec)) {
        const fs::path& path = it->path();
        if (is_hidden(path)) {
            if (it->is_directory(ec)) it.disable_recursion_pending();
            entries.push_back({path, Format::kUnsupported, "hidden"});
            continue;
        }
        if (it->is_directory(ec)) {
            if (it->is_symlink(ec))
                entries.push_back({path, Format::kUnsupported, "link to a folder (not followed)"});
            continue;
        }
        if (!it->is_regular_file(ec)) {
            entries.push_back({path, Format::kUnsupported, "not a regular file"});
            continue;
        }
        const Format format = format_of(path);
        if (format == Format::kUnsupported) {
            entries.push_back(
                {path, format, "unsupported extension (not .txt, .md, .markdown or .jsonl)"});
            continue;
        }
        entries.push_back({path, format, {}});
    }
    if (ec)
        return make_error(ErrorType::kInvalidRequest,
                          folder.string() + ": cannot list: " + ec.message());
    // Byte-wise order of the whole path: the same on every file system and locale.
    std::sort(entries.begin(), entries.end(),
              [](const Entry& a, const Entry& b) { return a.path.native() < b.path.native(); });
    return entries;
}

}  // namespace

std::string file_uri(const fs::path& path) {
    std::error_code ec;
    fs::path absolute = fs::absolute(path, ec);
    if (ec) absolute = path;
    return "file://" + percent_encode(absolute.lexically_normal().generic_string(), true);
}

std::string jsonl_document_uri(std::string_view doc_id) {
    return std::string(kDocumentUrnPrefix) + percent_encode(doc_id, false);
}

namespace {

Result<ReadSummary> read_documents_at(const fs::path& path, const ReadOptions& options,
                                      const DocumentFn& on_document) {
    std::error_code ec;
    const fs::file_status status = fs::status(path, ec);
    if (status.type() == fs::file_type::not_found) {
        return make_error(ErrorType::kNotFound, path.string() + ": no such file or folder");
    }
    if (ec) return make_error(ErrorType::kInvalidRequest, path.string() + ": " + ec.message());

    Reader reader(options, on_document);
    if (fs::is_directory(status)) {
        auto entries = list_folder(path);
        if (!entries) return std::move(entries).error();
        for (const Entry& entry : *entries) {
            if (!entry.skip_reason.empty()) {
                reader.skip(entry.path, entry.skip_reason);
                continue;
            }
            if (auto r = reader.read_file(entry.path, entry.format); !r) return r.error();
        }
        return reader.summary();
    }
    if (!fs::is_regular_file(status)) return invalid(path, 0, "not a regular file or a folder");
    const Format format = format_of(path);
    if (format == Format::kUnsupported) {
        return invalid(path, 0, "unsupported extension (expected .txt, .md, .markdown or .jsonl)");
    }
    if (auto r = reader.read_file(path, format); !r) return r.error();
    return reader.summary();
}

}  // namespace

Result<ReadSummary> read_documents(const fs::path& path, const ReadOptions& options,
                                   const DocumentFn& on_document) {
    auto summary = read_documents_at(path, options, on_document);
    if (summary) return summary;
    // Errors quote paths and lines that may hold bytes that are not UTF-8 (issue 16).
    base::Error error = std::move(summary).error();
    error.message = base::printable_utf8(error.message);
    if (error.place) error.place->file = base::printable_utf8(error.place->file);
    return error;
}

}  // namespace glassbox::loader
