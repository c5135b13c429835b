import pytest

from tokenyard.conversation import Image


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("data:image/png;base64,iVBOR", Image(media_type="image/png", data="iVBOR")),
        ("data:image/jpeg;charset=binary;base64,/9j/", Image(media_type="image/jpeg", data="/9j/")),
        ("data:;base64,AAAA", Image(data="AAAA")),
        ("https://example.com/a.png", Image(url="https://example.com/a.png")),
        ("data:text/plain,hello", Image(url="data:text/plain,hello")),  # not base64: passed on as a URL
    ],
)
def test_an_image_url_is_inline_data_only_when_it_is_a_base64_data_url(url: str, expected: Image) -> None:
    assert Image.from_url(url) == expected
