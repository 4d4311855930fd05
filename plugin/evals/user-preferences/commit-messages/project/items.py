def last_item(items):
    return items[len(items)]
