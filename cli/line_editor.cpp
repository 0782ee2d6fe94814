// The chat line editor: raw-mode key reading and redraw on a terminal, over LineBuffer.
#include "cli/line_editor.hpp"

#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <fstream>
#include <functional>

namespace glassbox::cli {
namespace {

bool continuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

// Puts the terminal in raw mode (no echo, byte at a time, no signals from Ctrl-C: the editor
// handles it) for its lifetime.
class RawMode {
public:
    RawMode() {
        if (::tcgetattr(STDIN_FILENO, &saved_) != 0) return;
        termios raw = saved_;
        raw.c_lflag &= static_cast<tcflag_t>(~(ECHO | ICANON | ISIG | IEXTEN));
        raw.c_iflag &= static_cast<tcflag_t>(~(IXON | ICRNL));
        raw.c_cc[VMIN] = 1;
        raw.c_cc[VTIME] = 0;
        // TCSADRAIN, not TCSAFLUSH: what was typed ahead (or pasted) while an answer printed
        // is kept for this line.
        active_ = ::tcsetattr(STDIN_FILENO, TCSADRAIN, &raw) == 0;
    }
    ~RawMode() {
        if (active_) (void)::tcsetattr(STDIN_FILENO, TCSADRAIN, &saved_);
    }
    RawMode(const RawMode&) = delete;
    RawMode& operator=(const RawMode&) = delete;

private:
    termios saved_{};
    bool active_ = false;
};

std::optional<char> read_byte() {
    char c = 0;
    for (;;) {
        const auto n = ::read(STDIN_FILENO, &c, 1);
        if (n == 1) return c;
        if (n < 0 && errno == EINTR) continue;
        return std::nullopt;
    }
}

void write_out(std::string_view text) {
    std::size_t done = 0;
    while (done < text.size()) {
        const auto n = ::write(STDOUT_FILENO, text.data() + done, text.size() - done);
        if (n <= 0) {
            if (n < 0 && errno == EINTR) continue;
            return;
        }
        done += static_cast<std::size_t>(n);
    }
}

// The key of an escape sequence, read after its ESC: ESC [ X, ESC [ n ~, ESC O X (arrows,
// Home, End, Delete); up and down walk the history (`walk_history(true)`: back).
void escape_key(LineBuffer& buffer, const std::function<void(bool back)>& walk_history) {
    const auto a = read_byte();
    const auto b = a ? read_byte() : std::nullopt;
    if (!a || !b) return;
    if (*a == '[' && *b >= '0' && *b <= '9') {
        const auto tilde = read_byte();
        if (tilde && *tilde == '~') {
            if (*b == '3') buffer.erase_at_cursor();
            if (*b == '1' || *b == '7') buffer.home();
            if (*b == '4' || *b == '8') buffer.end();
        }
        return;
    }
    if (*a != '[' && *a != 'O') return;
    if (*b == 'A') walk_history(true);
    if (*b == 'B') walk_history(false);
    if (*b == 'C') buffer.right();
    if (*b == 'D') buffer.left();
    if (*b == 'H') buffer.home();
    if (*b == 'F') buffer.end();
}

// A whole UTF-8 sequence from its first byte, so the cursor never sits inside one.
std::string utf8_sequence(char first) {
    const auto byte = static_cast<unsigned char>(first);
    std::string sequence(1, first);
    const int more = byte >= 0xF0 ? 3 : byte >= 0xE0 ? 2 : byte >= 0xC0 ? 1 : 0;
    for (int i = 0; i < more; ++i) {
        const auto next = read_byte();
        if (!next) break;
        sequence += *next;
    }
    return sequence;
}

}  // namespace

// ---- LineBuffer ---------------------------------------------------------------------------------

std::size_t LineBuffer::length() const noexcept {
    std::size_t n = 0;
    for (const char c : text_) n += continuation(c) ? 0 : 1;
    return n;
}

std::size_t LineBuffer::offset(std::size_t code_point) const noexcept {
    std::size_t n = 0;
    for (std::size_t i = 0; i < text_.size(); ++i) {
        if (continuation(text_[i])) continue;
        if (n == code_point) return i;
        ++n;
    }
    return text_.size();
}

void LineBuffer::insert(std::string_view utf8) {
    text_.insert(offset(cursor_), utf8);
    for (const char c : utf8) cursor_ += continuation(c) ? 0 : 1;
}

void LineBuffer::backspace() {
    if (cursor_ == 0) return;
    const std::size_t from = offset(cursor_ - 1);
    text_.erase(from, offset(cursor_) - from);
    --cursor_;
}

void LineBuffer::erase_at_cursor() {
    if (cursor_ >= length()) return;
    const std::size_t from = offset(cursor_);
    text_.erase(from, offset(cursor_ + 1) - from);
}

void LineBuffer::left() {
    if (cursor_ > 0) --cursor_;
}

void LineBuffer::right() {
    if (cursor_ < length()) ++cursor_;
}

void LineBuffer::clear() {
    text_.clear();
    cursor_ = 0;
}

void LineBuffer::kill_to_end() { text_.erase(offset(cursor_)); }

void LineBuffer::erase_word_back() {
    while (cursor_ > 0 && text_[offset(cursor_ - 1)] == ' ') backspace();
    while (cursor_ > 0 && text_[offset(cursor_ - 1)] != ' ') backspace();
}

void LineBuffer::set(std::string text) {
    text_ = std::move(text);
    cursor_ = length();
}

// ---- LineEditor ---------------------------------------------------------------------------------

LineEditor::LineEditor(std::filesystem::path history_file)
    : history_file_(std::move(history_file)) {
    if (history_file_.empty()) return;
    std::ifstream in(history_file_);
    for (std::string line; std::getline(in, line);) {
        if (!line.empty()) history_.push_back(line);
    }
    if (history_.size() > kMaxHistory) {
        history_.erase(history_.begin(), history_.end() - static_cast<std::ptrdiff_t>(kMaxHistory));
    }
}

LineEditor::~LineEditor() {
    if (history_file_.empty()) return;
    std::error_code ec;
    std::filesystem::create_directories(history_file_.parent_path(), ec);
    std::ofstream out(history_file_, std::ios::trunc);
    for (const auto& line : history_) out << line << '\n';
}

void LineEditor::add_history(const std::string& line) {
    if (line.empty() || line.find('\n') != std::string::npos) return;
    if (!history_.empty() && history_.back() == line) return;
    history_.push_back(line);
    if (history_.size() > kMaxHistory) history_.erase(history_.begin());
}

void LineEditor::redraw(std::string_view prompt, const LineBuffer& buffer) const {
    std::string out = "\r";
    out += prompt;
    out += buffer.text();
    out += "\x1b[K";  // clear to the end of the line
    const std::size_t back = buffer.length() - buffer.cursor();
    if (back > 0) out += "\x1b[" + std::to_string(back) + "D";
    write_out(out);
}

std::optional<std::string> LineEditor::read_line(std::string_view prompt) {
    RawMode raw;
    LineBuffer buffer;
    std::size_t walk = history_.size();  // history_.size(): the line being written
    std::string draft;
    redraw(prompt, buffer);
    const auto recall = [&](std::size_t to) {
        if (walk == history_.size()) draft = buffer.text();
        walk = to;
        buffer.set(walk == history_.size() ? draft : history_[walk]);
    };
    for (;;) {
        const auto c = read_byte();
        if (!c) {
            write_out("\r\n");
            return std::nullopt;
        }
        const auto byte = static_cast<unsigned char>(*c);
        switch (byte) {
            case '\r':
            case '\n':
                write_out("\r\n");
                return buffer.text();
            case 4:  // Ctrl-D
                if (buffer.text().empty()) {
                    write_out("\r\n");
                    return std::nullopt;
                }
                buffer.erase_at_cursor();
                break;
            case 3:  // Ctrl-C: drop the line, a fresh prompt
                write_out("^C\r\n");
                buffer.clear();
                walk = history_.size();
                break;
            case 1:
                buffer.home();
                break;
            case 5:
                buffer.end();
                break;
            case 2:
                buffer.left();
                break;
            case 6:
                buffer.right();
                break;
            case 11:
                buffer.kill_to_end();
                break;
            case 21:
                buffer.clear();
                break;
            case 23:
                buffer.erase_word_back();
                break;
            case 8:
            case 127:
                buffer.backspace();
                break;
            case 27:
                escape_key(buffer, [&](bool back) {
                    if (back && walk > 0) recall(walk - 1);
                    if (!back && walk < history_.size()) recall(walk + 1);
                });
                break;
            default:
                if (byte < 0x20) break;  // other control keys: ignored
                buffer.insert(utf8_sequence(*c));
        }
        redraw(prompt, buffer);
    }
}

}  // namespace glassbox::cli
