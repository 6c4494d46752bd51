"""Parsing untrusted workspace XML: no document type, no entity is ever expanded.

Every XML a student sends is read through :func:`parse_xml`.  A document
with a document type declaration (and so any entity declaration, which can
only stand inside one) is refused *before* the parser expands anything:
``defusedxml`` stops expat at the declaration's start.  Without ``<!`` in the
text a document cannot hold any markup declaration (XML has no way to spell
one otherwise, and a ``str`` is always parsed as UTF-8, whatever its XML
declaration says), so such text takes the standard library's C parser
directly; everything else (comments, CDATA, declarations) goes through
``defusedxml``.  Nested entity declarations crash the libexpat 2.5 that
many interpreters link (a stack overflow fixed in 2.7.0): with this module
they never reach it.
"""

from __future__ import annotations

import pyexpat
import xml.etree.ElementTree as ET

from defusedxml import DefusedXmlException
from defusedxml import ElementTree as SafeET

#: The first libexpat release without the known entity-recursion crash.
SAFE_EXPAT = (2, 7, 0)


class XmlRefused(ValueError):
    """Well-formed or not, this XML declares a document type or entities: it is not read."""


def parse_xml(text: str) -> ET.Element:
    """The document element of ``text``.

    :raises XmlRefused: the text has a document type or entity declaration.
    :raises xml.etree.ElementTree.ParseError: the text is not well-formed XML.
    """
    if "<!" not in text:
        return ET.fromstring(text)
    try:
        return SafeET.fromstring(text, forbid_dtd=True, forbid_entities=True, forbid_external=True)  # type: ignore[no-any-return]
    except DefusedXmlException as exc:
        raise XmlRefused(f"document type and entity declarations are refused ({type(exc).__name__})") from None


def expat_warning() -> str | None:
    """A warning when the linked libexpat predates :data:`SAFE_EXPAT`, else None."""
    linked = tuple(pyexpat.version_info)
    if linked >= SAFE_EXPAT:
        return None
    return (
        f"this Python links libexpat {'.'.join(map(str, linked))}, older than "
        f"{'.'.join(map(str, SAFE_EXPAT))}, which has known crashes on hostile XML; vexnudge never "
        "lets it expand entities, but upgrade the system's libexpat (or Python) when you can"
    )
