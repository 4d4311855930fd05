import os

MODE = os.environ['APP_ENV']


def greet(name):
    return f'hello {name}'
