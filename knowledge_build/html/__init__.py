"""What a page's HTML holds besides its boxes: its main content and the site's chrome around it
(main_content.py, with the page's language, generator, breadcrumbs and the site name in its title),
blocks of visible text (blocks.py), sections by heading (sections.py, remembered per page in
section_memory.py), tables (tables.py), the content type of a text (content_type.py), links that land
on a text (fragments.py), and start tags with their exact positions (tags.py).
"""
