"""Formatting and parsing of money amounts."""
import re

from .money import Money

SYMBOLS = {"USD": "$", "EUR": "€", "GBP": "£"}
_BY_SYMBOL = {v: k for k, v in SYMBOLS.items()}
_AMOUNT_RE = re.compile(r"^(-)?([$€£])?(\d{1,3}(?:,\d{3})*|\d+)(?:\.(\d{2}))?$")


def format_money(money: Money, symbol: bool = True, grouping: bool = True) -> str:
    """Format like ``-$1,234.56``; unknown currencies get a code suffix."""
    sign = "-" if money.cents < 0 else ""
    whole, frac = divmod(abs(money.cents), 100)
    body = ("{:,}" if grouping else "{}").format(whole) + ".%02d" % frac
    if not symbol:
        return sign + body
    if money.currency in SYMBOLS:
        return sign + SYMBOLS[money.currency] + body
    return "%s%s %s" % (sign, body, money.currency)


def parse_money(text: str, currency: str = "USD") -> Money:
    """Parse the output of :func:`format_money` (symbol form) back."""
    m = _AMOUNT_RE.match(text.strip())
    if not m:
        raise ValueError("not a money amount: %r" % (text,))
    sign, sym, whole, frac = m.groups()
    if sym:
        currency = _BY_SYMBOL[sym]
    cents = int(whole.replace(",", "")) * 100 + int(frac or 0)
    return Money(-cents if sign else cents, currency)
