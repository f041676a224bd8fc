// Writes tests/data/tokenizer-corpus.json: the strings the byte-level BPE tokenizer is checked
// on against transformers.js (reference.js). Deterministic: the random strings come from a
// seeded generator, so running it again writes the same file.
//
// {"plain": [entry...], "special": [string...]}. A plain entry is a string, or {"hex": "..."}
// for bytes that are not valid UTF-8 (JSON strings cannot hold them). "special" strings hold
// the text of special tokens and are encoded with special-token parsing.
"use strict";
const fs = require("fs");
const path = require("path");

const plain = [];
const add = (...xs) => plain.push(...xs);

// English prose and questions.
add("Hello world", "Hello, world!", "hello world", "HELLO WORLD", " Hello", "Hello ", "  Hello  ",
  "The quick brown fox jumps over the lazy dog.",
  "It was the best of times, it was the worst of times, it was the age of wisdom.",
  "What is the capital of France? The capital of France is Paris.",
  "Once upon a time, there was a little girl named Lily. She loved to play outside.",
  "I can't believe it's already 2024!", "Dr. Smith's office (room 42) opens at 9:30 a.m.",
  "e.g., i.e., etc., vs. U.S.A. Ph.D.", "A", "a", "I", " ", "", ".", "...", "!!!", "?!?!",
  "Mr. O'Neil and Ms. D'Angelo met at McDonald's.", "rock 'n' roll", "'tis the season",
  "\"Quoted text,\" she said, \"is here.\"", "Email me at john.doe+test@example.com or visit https://example.com/path?q=1&r=2#frag.",
  "Semicolons; colons: dashes - and em—dashes – en dashes.", "Tab\tseparated\tvalues", "Line one\nLine two\nLine three",
  "Windows\r\nline\r\nendings", "Old Mac\rline\rendings", "Trailing newline\n", "\nLeading newline",
  "Multiple\n\n\nblank lines", "indented\n    four spaces\n\ttab", "CamelCaseIdentifierWithManyParts",
  "snake_case_identifier_name", "kebab-case-name", "ALLCAPSWORD", "MiXeD cAsE tExT",
  "The year 1999 and the year 2000.", "Price: $1,234.56 (approx. €1.100,00)", "50% off! 3/4 cup, 1/2 tsp.",
  "Temperature: -12.5°C to +40°F", "Version 1.2.3-beta+build.456", "ISBN 978-3-16-148410-0",
  "Phone: +1 (555) 123-4567", "Coordinates: 48.8566° N, 2.3522° E");

// Code.
add("def main():\n    print(\"Hello, world!\")\n\nif __name__ == \"__main__\":\n    main()\n",
  "#include <stdio.h>\nint main(void) {\n\tprintf(\"%d\\n\", 42);\n\treturn 0;\n}\n",
  "for (int i = 0; i < n; ++i) { sum += a[i] * b[i]; }",
  "const x = (a, b) => a ?? b; // nullish\nlet y = x?.z ?? [];",
  "SELECT id, name FROM users WHERE age >= 18 ORDER BY name DESC LIMIT 10;",
  "{\"key\": \"value\", \"list\": [1, 2, 3], \"nested\": {\"a\": null, \"b\": true}}",
  "<html><body><div class=\"main\">Hello &amp; welcome</div></body></html>",
  "$ git commit -m \"fix: handle edge-case\" && git push origin main",
  "fn main() -> Result<(), Box<dyn Error>> { let v: Vec<u8> = vec![0xFF; 16]; Ok(()) }",
  "template <typename T> constexpr T max(T a, T b) noexcept { return a < b ? b : a; }",
  "x = [i**2 for i in range(10) if i % 2 == 0]  # squares",
  "    if (ptr != nullptr && ptr->next) {\n        ptr = ptr->next;\n    }",
  "#!/usr/bin/env bash\nset -euo pipefail\nfor f in *.txt; do wc -l \"$f\"; done",
  "a+=1;b-=2;c*=3;d/=4;e%=5;f<<=6;g>>=7;h&=8;i|=9;j^=10;",
  "matrix[i][j] = matrix[i-1][j-1] + 1 if s1[i] == s2[j] else 0",
  "// TODO(alice): refactor this!!!\n/* block\n * comment */",
  "regex = r'^(?P<name>[A-Za-z_]\\w*)\\s*=\\s*(?P<value>.+)$'",
  "\\begin{equation} E = mc^2 \\end{equation} % LaTeX",
  "key1=value1\nkey2 = value 2\n[section]\n; comment",
  "    \n\t\n  \t  \n", "}}}}]]]]))))", "((((a))))", "===>>> <<<===", "---\ntitle: Post\n---\n# Heading\n\n* item\n* item\n",
  "0x1F 0b1010 0o777 1e-10 3.14f 42u 7LL", "a_b_c__d___e", "__init__(self, *args, **kwargs)");

// Numbers of every length 1..20, alone, in text, grouped and with decimals.
for (let n = 1; n <= 20; ++n) {
  let s = "";
  for (let i = 0; i < n; ++i) s += String((i * 7 + n * 3 + 1) % 10);
  add(s);
  add("Total: " + s + " items");
  if (n % 4 === 0) add(s + "." + s.slice(0, 3));
}
add("1,000,000", "-42", "+7", "3.14159265358979", "1e10", "2^64 = 18446744073709551616", "0", "00", "000", "0000",
  "12 345 678", "١٢٣٤٥ ٦٧٨", "१२३४५", "一二三 123", "Ⅻ ⅻ ½ ¾ ²³", "１２３４５", "𝟏𝟐𝟑", "12abc34def567", "abc123def4567ghi");

// Contractions in upper, lower and mixed case, and apostrophes that are not contractions.
for (const c of ["s", "t", "re", "ve", "m", "ll", "d"]) {
  const up = c.toUpperCase();
  const mixed = c.length === 2 ? c[0].toUpperCase() + c[1] : up;
  add("it'" + c, "IT'" + up, "It'" + mixed, "'" + c, "'" + up, " '" + c + " x", "x '" + up);
}
add("don't DON'T Don'T", "we'll WE'LL We'Ll", "they've THEY'VE", "I'm I'M i'm", "you'd YOU'D",
  "she's SHE'S She'S", "the dog's bone", "'''", "''", "'s's's", "a'b'c'd", "don’t (curly apostrophe)",
  "'hello'", "‘single’ “double”", "O'Reilly's", "rock'n'roll", "'12", "it's 5 o'clock");

// Whitespace: runs, tabs, newlines, Unicode spaces.
for (let n = 1; n <= 10; ++n) add(" ".repeat(n), "a" + " ".repeat(n) + "b");
add("\t", "\t\t", "\n", "\n\n", "\r\n", "\r\n\r\n", " \n", "\n ", " \n ", "a \n b", "a\t\tb", "a \t b",
  "word   \n\n   word", "   leading", "trailing   ", "\n\n\nabc\n\n\n", "x\u00a0y", "x\u3000y", "x\u2028y",
  "x\u2009y\u200ay", "x \u00a0 y", "x\u000by\u000cz", "x\u0085y", "x\ufeffy", "x\u200by", "x\u1680y",
  "  \t\n  \r\n\t  ", "a\n\n\n\n\n\n\n\n\n\nb", " ".repeat(33) + "x", "\t".repeat(12) + "code");

// Scripts other than Latin.
add("你好，世界！", "我爱北京天安门。", "日本語のテキストです。カタカナとひらがな。", "東京都渋谷区",
  "안녕하세요, 세계!", "한국어 텍스트 테스트입니다", "中文English混合text", "人工智能（AI）正在改变世界。",
  "𠀀𠀁𠀂 (CJK extension B)", "繁體中文與简体中文", "ｶﾀｶﾅ ﾊﾝｶｸ", "漢字かなカナ混じり文",
  "مرحبا بالعالم", "اللغة العربية جميلة.", "السلام عليكم ورحمة الله", "شكراً جزيلاً",
  "नमस्ते दुनिया", "हिन्दी भाषा बहुत सुंदर है।", "क्षत्रिय ज्ञान श्री", "शुभ प्रभात",
  "שלום עולם", "Привет, мир!", "Съешь же ещё этих мягких французских булок.", "Γειά σου Κόσμε",
  "สวัสดีชาวโลก", "Xin chào thế giới", "Tiếng Việt có dấu", "Ελληνικά και Русский и English",
  "ქართული ენა", "Հայերեն", "தமிழ் மொழி", "বাংলা ভাষা", "ಕನ್ನಡ", "ᚠᛇᚻ᛫ᛒᛦᚦ", "ⵜⴰⵎⴰⵣⵉⵖⵜ",
  "Zürich, Köln, Málaga, Ørsted, Łódź, Çanakkale, Straße");

// Emoji: single, skin tones, ZWJ sequences, flags, keycaps.
add("😀", "😀😃😄😁", "Hello 👋 world 🌍!", "👍🏽", "👨‍👩‍👧‍👦", "👩🏽‍💻", "🏳️‍🌈", "🇫🇷🇯🇵🇺🇸",
  "1️⃣ 2️⃣ #️⃣", "❤️ ♥ ❤", "🧑‍🤝‍🧑", "🐈‍⬛ black cat", "I ❤️ NY 🗽", "👁️‍🗨️", "😀 😀  😀   😀",
  "🤖🤖🤖🤖🤖🤖🤖🤖", "☕️☕️", "x😀y", "😀\n😀", "emoji at end 🎉");

// Canonically equivalent forms (Qwen normalizes to NFC; Llama 3 does not normalize).
add("e\u0301", "cafe\u0301", "n\u0303o", "\u1100\u1161\u11a8", "\u212b", "A\u030a", "\u0041\u0308\u0304",
  "Ã©", "ﬁ ligature", "x\u0338");

// Punctuation and symbols.
add("!@#$%^&*()_+-=[]{}|;:',.<>?/`~", "……", "→ ← ↑ ↓ ⇒", "∀x∈ℝ: x²≥0", "© ® ™ § ¶", "• · ‣ ◦",
  "«guillemets» „German“", "¿Qué? ¡Sí!", "a—b–c-d", "~~~~~~", "#####", "*****", "-----", "_____",
  "=====", "/* */ // --", "<<>>", "???!!!...", "\\\\\\\\", "\"\"\"\"");

// Long words and long runs.
add("a".repeat(1000), "ab".repeat(300), "supercalifragilisticexpialidocious".repeat(8),
  "Pneumonoultramicroscopicsilicovolcanoconiosis", "1234567890".repeat(50), "😀".repeat(100),
  "中".repeat(200), "x" + " ".repeat(500) + "y", "\n".repeat(200), "-".repeat(300),
  "abcdefghijklmnopqrstuvwxyz".repeat(20).toUpperCase(), "The" + "Quick".repeat(100),
  "https://example.com/" + "very/long/path/".repeat(30) + "index.html",
  "QmFzZTY0IGVuY29kZWQgdGV4dCBsb29rcyBsaWtlIHRoaXM=".repeat(10));

// Text that looks like special tokens of other tokenizers (plain text everywhere).
add("<s>", "</s>", "<unk>", "<pad>", "[INST]", "[/INST]", "<<SYS>>", "<|user|>", "<|assistant|>",
  "<|endoftext", "|>", "<|", "<think>", "</think>", "I <think> therefore I am");

// Where ECMAScript's regex (the reference) and PCRE2's defaults differ: U+FEFF is white
// space, U+0085 and U+180E are not; the contraction group is ASCII-caseless only ('ſ is no
// contraction). Found by differential fuzzing against the reference.
add("\ufeff't9'", "\u094d\u0085'D'MXK", "-\ufeff\ufeff'RE", "\u00a0\u180e\u093e\u0939", "it'\u017f x'\u017F", "'\u017fS",
  "a\u0085 b", "a \u0085b", "\u2028   \ufeff", "x\ufeff\ufeff y", "'K'k\u212a");

// Random mixtures from a seeded generator (mulberry32).
let seed = 20240601;
const rand = () => {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};
const pool = Array.from("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789" +
  "      \n\n\t\r'''\".,;:!?-_()[]{}<>/\\|@#$%^&*+=~`" +
  "éèêëàâäôöûüçñßøåæœÉÀÇÑ" + "ЖжЯяЩщ" + "中文字日本語한국어" + "ाि्ुं" + "عربي" + "αβγΩ" +
  "\u00a0\u3000\u2028\u200d\u0301\u0300\ufe0f" + "ſK" ).concat(["😀", "👍🏽", "👨‍👩‍👧", "🇩🇪", "’s", "'S", "'ll", "'VE", "\r\n"]);
for (let i = 0; i < 120; ++i) {
  const len = 1 + Math.floor(rand() * (i < 100 ? 40 : 400));
  let s = "";
  for (let k = 0; k < len; ++k) s += pool[Math.floor(rand() * pool.length)];
  add(s);
}

// Bytes that are not valid UTF-8 (lone continuation bytes, truncated sequences, overlong
// forms, encoded surrogates, bytes never used in UTF-8), alone and inside text.
add({hex: "80"}, {hex: "ff"}, {hex: "c0af"}, {hex: "e0808f"}, {hex: "eda080"}, {hex: "f4908080"},
  {hex: "48656c6c6fe2"}, {hex: "48656c6c6fe282"}, {hex: "e282ac20e282"}, {hex: "f09f98"},
  {hex: "f09f9880f09f98"}, {hex: "616263ff646566"}, {hex: "c3"}, {hex: "c328"}, {hex: "a0a1"},
  {hex: "e29d20"}, {hex: "fe fe ff ff".replace(/ /g, "")}, {hex: "20" + "80".repeat(10) + "20"},
  {hex: "6974" + "c2" + "27" + "73"}, {hex: "3132" + "f8888080" + "3334"});

const special = [
  "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHello!<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n",
  "<|begin_of_text|>Hello<|end_of_text|>", "text<|eot_id|>more text", "<|eot_id|><|eot_id|>", "<|reserved_special_token_5|>",
  "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nHi there!<|im_end|>\n<|im_start|>assistant\n",
  "<|im_start|>assistant\n<think>\n\n</think>\n\nHello!<|im_end|>", "<|endoftext|>", "a<|im_end|>b", "<|im_start|><|im_start|>",
  "<tool_call>\n{\"name\": \"f\"}\n</tool_call>", "no special tokens here", "<|im_start", "<|eot_id|>\n\n<|im_end|>\n\n",
];

const out = path.join(__dirname, "..", "..", "tests", "data", "tokenizer-corpus.json");
fs.writeFileSync(out, JSON.stringify({plain, special}, null, 1) + "\n");
console.log(`${out}: ${plain.length} plain strings, ${special.length} with special tokens`);
