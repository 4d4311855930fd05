from price import parse_price


def test_plain():
    assert parse_price('3') == 3.0
