"""mkdocs hooks of the Soul Stack docs site (mkdocs.yml: hooks).

The pages live in docs/ and read as they are on GitHub, where a link such as
../examples/hello or ../README.md leaves docs/ for the repository. The site
holds only docs/, so such links are pointed at the repository on GitHub.
"""
import posixpath
import re

REPO = "https://github.com/soulstack/soulstack/blob/main/"
LINK = re.compile(r"(\]\()([^)\s#]+)(#[^)\s]*)?(\))")


def on_page_markdown(markdown, page, config, files):
    base = posixpath.dirname(page.file.src_uri)

    def rewrite(m):
        target = m.group(2)
        if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target):
            return m.group(0)
        path = posixpath.normpath(posixpath.join(base, target))
        if not (path == ".." or path.startswith("../")):
            return m.group(0)
        return m.group(1) + REPO + path[3:] + (m.group(3) or "") + m.group(4)

    out, fence = [], False
    for line in markdown.split("\n"):
        if line.lstrip().startswith("```"):
            fence = not fence
        out.append(line if fence else LINK.sub(rewrite, line))
    return "\n".join(out)
