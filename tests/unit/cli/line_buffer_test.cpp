// The chat line editor's buffer: UTF-8 aware cursor moves and edits.
#include "cli/line_editor.hpp"

#include <gtest/gtest.h>

namespace glassbox::cli {
namespace {

TEST(LineBuffer, EditsByCodePointNotByByte) {
    LineBuffer b;
    b.insert("héllo");
    EXPECT_EQ(b.length(), 5u);
    EXPECT_EQ(b.cursor(), 5u);
    b.left();
    b.left();
    b.left();
    b.backspace();  // removes the two-byte é whole
    EXPECT_EQ(b.text(), "hllo");
    EXPECT_EQ(b.cursor(), 1u);
    b.insert("ê");
    EXPECT_EQ(b.text(), "hêllo");
    b.erase_at_cursor();
    EXPECT_EQ(b.text(), "hêlo");
    b.home();
    b.backspace();  // nothing before the start
    EXPECT_EQ(b.text(), "hêlo");
    b.kill_to_end();
    EXPECT_EQ(b.text(), "");
}

TEST(LineBuffer, WordsEndsAndSet) {
    LineBuffer b;
    b.insert("who founded  it");
    b.erase_word_back();
    EXPECT_EQ(b.text(), "who founded  ");
    b.erase_word_back();
    EXPECT_EQ(b.text(), "who ");
    b.right();  // at the end already
    EXPECT_EQ(b.cursor(), 4u);
    b.set("☃ snow");
    EXPECT_EQ(b.cursor(), 6u);
    b.home();
    b.right();
    b.insert("!");
    EXPECT_EQ(b.text(), "☃! snow");
    b.clear();
    EXPECT_EQ(b.length(), 0u);
}

}  // namespace
}  // namespace glassbox::cli
