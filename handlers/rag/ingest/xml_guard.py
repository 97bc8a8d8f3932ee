"""A streaming check that an XML document declares no DTD and no entities.

Entity expansion ("billion laughs", external entities) needs a document type declaration, and
the Office Open XML formats never use one, so any document that has one is refused before a
real parser sees it. The check runs expat (the standard library's parser; ``defusedxml`` is not
a dependency) over the bytes as they are decompressed, with handlers that raise on the first
DOCTYPE or entity declaration: nothing is expanded and memory stays that of one buffer.
"""

from __future__ import annotations

from xml.parsers import expat

__all__ = ["UnsafeXml", "XmlGuard"]

_HEAD_BYTES = 1024
_WHITESPACE = b" \t\r\n"
_UTF8_BOM = b"\xef\xbb\xbf"


class UnsafeXml(ValueError):
    """The document declares a DTD or entities, or is XML that expat cannot read (such a
    document is not trusted: another parser might read a declaration expat did not reach)."""


class XmlGuard:
    """Feed a document in pieces, then close it. Raises UnsafeXml on a DOCTYPE, an entity
    declaration, or a syntax error after the document began as XML; a document that does not
    begin with markup (an image, say) is not XML, and feeding it stops being checked."""

    def __init__(self) -> None:
        self._parser = expat.ParserCreate()
        self._parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
        self._parser.StartDoctypeDeclHandler = self._refuse_doctype
        self._parser.EntityDeclHandler = self._refuse_entity
        # Without a DTD, any entity reference but the five predefined ones is a syntax error
        # ("undefined entity"), so nothing else can be expanded.
        self._head = bytearray()
        self._not_xml = False

    @property
    def is_xml(self) -> bool:
        """False once the document turned out not to be XML at all."""
        return not self._not_xml

    def feed(self, data: bytes) -> None:
        if self._not_xml:
            return
        if len(self._head) < _HEAD_BYTES:
            self._head += data[: _HEAD_BYTES - len(self._head)]
        self._parse(data, final=False)

    def close(self) -> None:
        if not self._not_xml:
            self._parse(b"", final=True)

    def _parse(self, data: bytes, *, final: bool) -> None:
        try:
            self._parser.Parse(data, final)
        except expat.ExpatError as error:
            before = bytes(self._head[: self._parser.ErrorByteIndex])
            if not before.removeprefix(_UTF8_BOM).strip(_WHITESPACE):
                self._not_xml = True  # failed at its first character: not markup at all
                return
            raise UnsafeXml(f"is not well-formed XML ({error})") from None
        except UnsafeXml:
            raise
        except (LookupError, ValueError) as error:  # an encoding expat cannot read
            raise UnsafeXml(f"is XML in an unsupported encoding ({error})") from None

    @staticmethod
    def _refuse_doctype(name: str, *_: object) -> None:
        raise UnsafeXml(f"declares a document type ('{name}'), which can expand entities")

    @staticmethod
    def _refuse_entity(name: str, *_: object) -> None:
        raise UnsafeXml(f"declares an entity ('{name}')")
