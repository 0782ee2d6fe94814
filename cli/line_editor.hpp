// A small line editor for `glassbox chat` on a terminal: one line, edited in place, with a
// history (no readline dependency). Keys: ←/→, Home/End (Ctrl-A/Ctrl-E), Backspace, Delete,
// Ctrl-U (clear), Ctrl-K (to the end), Ctrl-W (word back), ↑/↓ (history), Enter, Ctrl-C (drop
// the line), Ctrl-D (end, on an empty line).
#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace glassbox::cli {

// The pure editing state, apart from the terminal so it can be tested: a UTF-8 buffer, the
// cursor as a code-point index, and the history walk.
class LineBuffer {
public:
    const std::string& text() const noexcept { return text_; }
    std::size_t cursor() const noexcept { return cursor_; }  // in code points
    std::size_t length() const noexcept;                     // in code points

    void insert(std::string_view utf8);
    void backspace();
    void erase_at_cursor();
    void left();
    void right();
    void home() { cursor_ = 0; }
    void end() { cursor_ = length(); }
    void clear();
    void kill_to_end();
    void erase_word_back();
    void set(std::string text);  // cursor at the end

private:
    std::size_t offset(std::size_t code_point) const noexcept;
    std::string text_;
    std::size_t cursor_ = 0;
};

class LineEditor {
public:
    // History lines are read from and appended to `history_file` (none when empty), the last
    // kMaxHistory kept.
    explicit LineEditor(std::filesystem::path history_file = {});
    ~LineEditor();
    LineEditor(const LineEditor&) = delete;
    LineEditor& operator=(const LineEditor&) = delete;

    // Reads one line with `prompt` shown; nullopt at end of input (Ctrl-D on an empty line, or
    // stdin closed). The terminal is in raw mode only while a line is read.
    std::optional<std::string> read_line(std::string_view prompt);
    void add_history(const std::string& line);

    static constexpr std::size_t kMaxHistory = 500;

private:
    void redraw(std::string_view prompt, const LineBuffer& buffer) const;

    std::filesystem::path history_file_;
    std::vector<std::string> history_;
};

}  // namespace glassbox::cli
