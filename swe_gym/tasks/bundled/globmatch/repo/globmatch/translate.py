"""Glob pattern -> regular expression."""
import re


def _class_end(pattern: str, start: int) -> int:
    """Index of the ``]`` closing the class that opens at *start*, or -1."""
    j = start + 1
    if j < len(pattern) and pattern[j] == "!":
        j += 1
    if j < len(pattern) and pattern[j] == "]":
        j += 1  # a leading "]" is a literal member of the class
    return pattern.find("]", j)


def _translate_class(body: str) -> str:
    negate = body.startswith("!")
    if negate:
        body = body[1:]
    body = body.replace("\\", "\\\\").replace("^", "\\^")
    if negate:
        # a negated class must still not match the path separator
        return "[^/%s]" % body
    return "(?!/)[%s]" % body


def translate(pattern: str) -> str:
    """Translate a glob *pattern* into an anchored regular expression."""
    out = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "*":
            if pattern.startswith("**", i):
                j = i + 2
                while pattern.startswith("*", j):
                    j += 1  # "***" is the same as "**"
                if pattern.startswith("/", j):
                    # "**/" spans directories
                    out.append(".*/")
                    i = j + 1
                else:
                    out.append(".*")
                    i = j
            else:
                out.append("[^/]*")
                i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[":
            end = _class_end(pattern, i)
            if end < 0:
                out.append(re.escape(c))
                i += 1
            else:
                out.append(_translate_class(pattern[i + 1:end]))
                i = end + 1
        else:
            out.append(re.escape(c))
            i += 1
    return r"(?s:%s)\Z" % "".join(out)
