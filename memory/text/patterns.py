"""How the text rules write a bilingual word pattern: English words matched whole and in any case, or Chinese words,
which have no word boundaries to match at (`bilingual(r"usually|always", "经常|总是")` finds "Always" and "经常"
but not "always" inside "hallways"). Compiled once, at import, by the module that reads it.
"""

from __future__ import annotations

import re


def bilingual(english: str, chinese: str) -> re.Pattern[str]:
    """`\\b(?:english)\\b|chinese`, case-insensitive: `english` and `chinese` are alternations of words."""
    return re.compile(rf"\b(?:{english})\b|{chinese}", re.IGNORECASE)
