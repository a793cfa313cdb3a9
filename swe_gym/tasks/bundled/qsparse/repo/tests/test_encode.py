from qsparse import quote, urlencode


def test_quote_safe_characters():
    assert quote("abc-._~XYZ019") == "abc-._~XYZ019"


def test_quote_reserved():
    assert quote("a b&c=d/e") == "a%20b%26c%3Dd%2Fe"


def test_quote_keeps_extra_safe():
    assert quote("/usr/local", safe="/") == "/usr/local"


def test_quote_utf8():
    assert quote("é") == "%C3%A9"


def test_quote_plus():
    assert quote("a b", plus=True) == "a+b"


def test_urlencode_mapping():
    assert urlencode({"q": "hello world", "n": 3}) == "q=hello+world&n=3"


def test_urlencode_doseq():
    assert urlencode([("a", [1, 2]), ("b", "x")], doseq=True) == "a=1&a=2&b=x"
